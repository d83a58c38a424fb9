"""The torch releases mps_ops supports, and what the registry says about them.

Nothing here needs the built extension.
"""

from __future__ import annotations

import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import codegen  # noqa: E402

# shared/ sits beside the repository (the main checkout, a worktree and CI's
# fresh clone alike).
COVERAGE = os.path.join(os.path.dirname(ROOT), "shared", "mps-coverage.md")


def coverage_table() -> tuple[list[str], dict[str, list[str]]]:
    """(releases, overload -> one cell per release) of the first table."""
    with open(COVERAGE) as f:
        lines = f.read().splitlines()
    header = next(i for i, l in enumerate(lines) if l.startswith("| operator |"))
    releases = [c.strip() for c in lines[header].strip("|").split("|")[1:]]
    rows = {}
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return releases, rows


# The registry's mps_missing follows the per-release data derived from the
# wheels (test_mps_coverage_data.py), which reproduces the table.


def mpsgraph_table() -> dict:
    """operator name -> (the first column's cell, 2.15.0's) of the table of
    stock kernels that still run MPSGraph ('G', 'GM' or 'M')."""
    with open(COVERAGE) as f:
        lines = f.read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("## Still MPSGraph"))
    header = next(i for i in range(start, len(lines)) if lines[i].startswith("| operator(s) |"))
    assert [c.strip() for c in lines[header].strip("|").split("|")[1:]] == ["2.9.1–2.14.1", "2.15.0"]
    table = {}
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        names, early, latest = (c.strip() for c in line.strip("|").split("|"))
        for name in _operator_names(names):
            table.setdefault(name, (early, latest))
    return table


def _operator_names(cell: str) -> list:
    """The operators a cell names, its shorthands spelled out:
    "nll_loss_forward/backward" is nll_loss_forward and nll_loss_backward,
    "pixel_shuffle/unshuffle" pixel_shuffle and pixel_unshuffle,
    "mse_loss, huber_loss (+ backward)" adds mse_loss_backward and
    huber_loss_backward."""
    def spell_out(slashed):  # the parts after a slash share the first part's prefix
        first, *rest = slashed.group(0).split("/")
        prefix = first[:first.rfind("_") + 1]
        return ", ".join([first] + [prefix + part for part in rest])

    cell = re.sub(r"[A-Za-z0-9_]+(?:/[A-Za-z0-9_]+)+", spell_out, cell)
    with_backward = "(+ backward)" in cell
    names = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", cell.replace("(+ backward)", ""))
    return names + [f"{n}_backward" for n in names if with_backward and not n.endswith("_backward")]


def test_operator_names_spell_out_the_shorthands():
    assert _operator_names("nll_loss_forward/backward, nll_loss2d_forward/backward") == [
        "nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward", "nll_loss2d_backward"]
    assert _operator_names("mse_loss, huber_loss (+ backward)") == [
        "mse_loss", "huber_loss", "mse_loss_backward", "huber_loss_backward"]
    assert _operator_names("threshold, threshold_backward") == ["threshold", "threshold_backward"]
    assert _operator_names("isin, pixel_shuffle/unshuffle") == ["isin", "pixel_shuffle", "pixel_unshuffle"]
    assert _operator_names("logical_and/or/xor") == ["logical_and", "logical_or", "logical_xor"]


@pytest.mark.skipif(not os.path.exists(COVERAGE), reason=f"no {COVERAGE} beside this checkout")
def test_registry_mpsgraph_follows_the_coverage_table():
    """An override lists the releases whose stock kernel is MPSGraph: 2.9 to
    2.14 where the table says G for them, 2.15 where it says G (or GM: the
    MPSGraph half) for 2.15.0. The table is a summary: it leaves out
    isposinf, isneginf and logit_backward, whose releases
    test_mps_coverage_data checks against the per-release data, as it does
    every override's."""
    table = mpsgraph_table()
    overrides = [entry for entry in codegen.load_registry() if entry.policy == "override"]
    assert sorted(e.name for e in overrides if e.name not in table) == [
        "isneginf", "isposinf", "logit_backward"]
    for entry in overrides:
        if entry.name not in table:
            continue
        early, latest = table[entry.name]
        expected = [f"2.{minor}" for minor in range(9, 15)] if "G" in early else []
        expected += ["2.15"] if "G" in latest else []
        assert list(entry.mpsgraph) == expected, entry.name


# ---------------------------------------------------------------------------
# The supported range, and the headers CI type-checks the Metal backend against

import torch_headers  # noqa: E402


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def test_supported_range_is_stated_the_same_everywhere():
    oldest, newest = _minor(torch_headers.OLDEST_SUPPORTED), _minor(torch_headers.NEWEST_SUPPORTED)
    with open(os.path.join(ROOT, "setup.py")) as f:
        assert f'"torch>={oldest}"' in f.read()
    with open(os.path.join(ROOT, "csrc", "metal", "torch_mps_adapter.h")) as f:
        major, minor = oldest.split(".")
        assert (f"TORCH_VERSION_MAJOR < {major} || (TORCH_VERSION_MAJOR == {major} && "
                f"TORCH_VERSION_MINOR < {minor})") in f.read()
    for doc in ("README.md", os.path.join("docs", "macos.md")):
        with open(os.path.join(ROOT, doc)) as f:
            assert f"torch {oldest} to {newest}" in f.read(), doc


@pytest.mark.skipif(not os.path.exists(COVERAGE), reason=f"no {COVERAGE} beside this checkout")
def test_newest_supported_release_is_the_coverage_tables_newest():
    releases, _ = coverage_table()
    assert releases[0] == torch_headers.OLDEST_SUPPORTED
    assert releases[-1] == torch_headers.NEWEST_SUPPORTED


def test_bounds_command_prints_oldest_then_newest(capsys):
    assert torch_headers.main(["--bounds"]) == 0
    assert capsys.readouterr().out.split() == [torch_headers.OLDEST_SUPPORTED,
                                               torch_headers.NEWEST_SUPPORTED]


@pytest.mark.parametrize("version, platform", [
    ("2.9.1", "macosx_11_0_arm64"), ("2.11.0", "macosx_11_0_arm64"),
    ("2.12.1", "macosx_14_0_arm64"), ("2.15.0", "macosx_14_0_arm64"),
])
def test_wheel_platform_follows_torchs_minimum_macos(version, platform):
    assert torch_headers.wheel_platform(version) == platform
    command = torch_headers.pip_download_command(version, "d")
    assert command[command.index("--platform") + 1] == platform
    assert f"torch=={version}" in command and "--no-deps" in command
    assert "--only-binary=:all:" in command


def _fake_pip(wheel_files: dict[str, bytes], calls: list):
    import zipfile

    def run(command, **kwargs):
        calls.append(command)
        # pip runs without the machine's configuration (a cap on torch's version).
        assert kwargs["env"]["PIP_CONFIG_FILE"] == os.devnull
        dest = command[command.index("-d") + 1]
        version = command[command.index("download") + 1].split("==")[1]
        with zipfile.ZipFile(os.path.join(dest, f"torch-{version}-cp311-none-any.whl"), "w") as wheel:
            for name, data in wheel_files.items():
                wheel.writestr(name, data)
        return None

    return run


def test_fetch_unpacks_only_the_headers_once(tmp_path):
    calls = []
    run = _fake_pip({"torch/include/ATen/mps/MPSStream.h": b"// stream",
                     "torch/include/c10/macros/Macros.h": b"// macros",
                     "torch/lib/libtorch_cpu.dylib": b"\0" * 64,
                     "torch/__init__.py": b""}, calls)
    include = torch_headers.fetch("2.15.0", str(tmp_path), run=run)
    assert include == os.path.join(str(tmp_path), "torch-headers", "2.15.0", "torch", "include")
    assert open(os.path.join(include, "ATen", "mps", "MPSStream.h")).read() == "// stream"
    unpacked = sorted(os.path.relpath(os.path.join(d, f), str(tmp_path))
                      for d, _, files in os.walk(str(tmp_path)) for f in files)
    assert unpacked == [os.path.join("torch-headers", "2.15.0", "torch", "include", *p.split("/"))
                        for p in ("ATen/mps/MPSStream.h", "c10/macros/Macros.h")] + [
        os.path.join("wheels", "2.15.0", "torch-2.15.0-cp311-none-any.whl")], "the headers and the kept wheel"
    assert torch_headers.fetch("2.15.0", str(tmp_path), run=run) == include
    assert len(calls) == 1, "a cached release is not downloaded again"


def test_fetch_refuses_a_wheel_without_mps_headers(tmp_path):
    run = _fake_pip({"torch/include/c10/macros/Macros.h": b""}, [])
    with pytest.raises(RuntimeError, match="MPSStream.h"):
        torch_headers.fetch("2.9.1", str(tmp_path), run=run)
    assert not os.path.exists(os.path.join(str(tmp_path), "torch-headers", "2.9.1"))
