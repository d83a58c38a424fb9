"""The per-release MPS data behind mps_ops.audit (mps_ops/data/mps_coverage.json)
and the tool that derives it from the released macOS wheels
(tools/mps_coverage.py).

The wheels are downloaded once into tools/torch_headers.py's cache (CI's
header checks download two of them already); deriving one release takes a
few seconds. Nothing here needs the built extension but the registry check.
"""

from __future__ import annotations

import json
import os
import struct
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import mps_coverage  # noqa: E402
from test_torch_versions import COVERAGE, coverage_table  # noqa: E402

COMMITTED = mps_coverage.load()
REGISTERED = set("MGB")   # an MPS kernel of the release's own


def committed_column(version: str) -> dict:
    i = COMMITTED["releases"].index(version)
    return {name: statuses[i] for name, statuses in COMMITTED["ops"].items() if statuses[i] != "-"}


@pytest.fixture(scope="module", params=mps_coverage.RELEASES)
def derived(request):
    """(release, the tool's statuses for it, derived now from the wheel)."""
    version = request.param
    return version, mps_coverage.release_statuses(*mps_coverage.read_wheel(mps_coverage.cached_wheel(version)))


def test_committed_data_is_what_the_tool_derives(derived):
    version, statuses = derived
    committed = committed_column(version)
    differ = sorted(n for n in set(committed) | set(statuses) if committed.get(n, "-") != statuses.get(n, "-"))
    assert not differ, (f"torch {version}: mps_ops/data/mps_coverage.json and tools/mps_coverage.py disagree on "
                        f"{len(differ)} overloads (run python tools/mps_coverage.py): "
                        + ", ".join(f"{n} {committed.get(n, '-')}->{statuses.get(n, '-')}" for n in differ[:20]))


def test_data_covers_every_supported_release_and_names_its_letters():
    assert COMMITTED["schema"] == mps_coverage.SCHEMA
    assert COMMITTED["releases"] == mps_coverage.RELEASES
    assert set(COMMITTED["legend"]) == set("MGBCXP-")
    assert all(len(s) == len(mps_coverage.RELEASES) and set(s) <= set(COMMITTED["legend"])
               for s in COMMITTED["ops"].values())


# ---------------------------------------------------------------------------
# The facts in shared/mps-coverage.md, read from the same wheels another way


@pytest.mark.skipif(not os.path.exists(COVERAGE), reason=f"no {COVERAGE} beside this checkout")
def test_data_reproduces_the_missing_ops_table():
    """'missing' is missing or always on the CPU (X, P); '.' an MPS kernel or a
    composite; 'n/a' not defined."""
    releases, rows = coverage_table()
    assert releases == COMMITTED["releases"]
    meaning = {"missing": "XP", ".": "MGBC", "n/a": "-"}
    wrong = [(op, release, cell, COMMITTED["ops"].get(op, "-" * len(releases))[i])
             for op, cells in rows.items() for i, (release, cell) in enumerate(zip(releases, cells))
             if COMMITTED["ops"].get(op, "-" * len(releases))[i] not in meaning[cell]]
    assert not wrong, wrong[:20]
    assert len(rows) > 150


# shared/mps-coverage.md's "Still MPSGraph" table, its shorthands spelled out
# as overloads: (2.14.1's class, 2.15.0's). Its 2.9.1-2.14.1 column holds for
# 2.14.1 (earlier releases differ for some rows, as it says). 'B' is its 'GM'.
MPSGRAPH_ROWS = [
    ("_softmax _softmax.out _log_softmax _log_softmax.out", "G", "M"),
    ("_softmax_backward_data _softmax_backward_data.out _log_softmax_backward_data "
     "_log_softmax_backward_data.out", "G", "G"),
    ("nll_loss_forward nll_loss_forward.output nll_loss_backward nll_loss_backward.grad_input "
     "nll_loss2d_forward nll_loss2d_forward.output nll_loss2d_backward nll_loss2d_backward.grad_input", "G", "M"),
    ("threshold threshold.out threshold_backward threshold_backward.grad_input", "G", "G"),
    ("native_layer_norm_backward", "G", "G"),
    ("native_batch_norm native_batch_norm.out _native_batch_norm_legit _native_batch_norm_legit.out "
     "_native_batch_norm_legit.no_stats _native_batch_norm_legit.no_stats_out _batch_norm_with_update "
     "_batch_norm_with_update.out native_batch_norm_backward batch_norm_backward", "G", "G"),
    ("max_pool2d_with_indices_backward max_pool2d_with_indices_backward.grad_input avg_pool2d_backward "
     "avg_pool2d_backward.grad_input", "G", "G"),
    ("mse_loss mse_loss.out mse_loss_backward mse_loss_backward.grad_input smooth_l1_loss smooth_l1_loss.out "
     "smooth_l1_loss_backward.grad_input huber_loss huber_loss.out huber_loss_backward.out binary_cross_entropy "
     "binary_cross_entropy.out binary_cross_entropy_backward binary_cross_entropy_backward.grad_input", "G", "G"),
    ("hardtanh_backward hardtanh_backward.grad_input _prelu_kernel _prelu_kernel_backward", "G", "G"),
    ("_weight_norm_interface _weight_norm_interface_backward", "G", "G"),
    ("std_mean.correction var_mean.correction", "G", "B"),
    ("std.correction var.correction prod prod.dim_int prod.int_out pow.Tensor_Tensor pow.Tensor_Tensor_out flip "
     "where.self where.self_out addcmul addcmul.out addcdiv addcdiv.out", "G", "M"),
    ("constant_pad_nd reflection_pad1d reflection_pad2d reflection_pad3d replication_pad2d replication_pad3d "
     "reflection_pad1d_backward reflection_pad2d_backward reflection_pad3d_backward replication_pad2d_backward "
     "replication_pad3d_backward", "G", "M"),
    ("upsample_nearest1d_backward upsample_nearest2d_backward _upsample_nearest_exact2d_backward "
     "upsample_bilinear2d_backward upsample_linear1d_backward", "G", "M"),
    ("logical_and.out logical_or.out logical_xor.out floor floor.out ceil ceil.out trunc trunc.out "
     "tanh_backward tanh_backward.grad_input softplus softplus.out softplus_backward "
     "softplus_backward.grad_input", "G", "M"),
    ("isin.Tensor_Tensor isin.Scalar_Tensor repeat pixel_shuffle pixel_unshuffle bincount sign sign.out sgn "
     "signbit frac logit acosh asinh atanh", "G", "G"),
]


@pytest.mark.parametrize("overloads, at_2_14, at_2_15", MPSGRAPH_ROWS, ids=[r[0].split()[0] for r in MPSGRAPH_ROWS])
def test_data_reproduces_the_mpsgraph_table(overloads, at_2_14, at_2_15):
    i, j = COMMITTED["releases"].index("2.14.1"), COMMITTED["releases"].index("2.15.0")
    got = {name: (COMMITTED["ops"][name][i], COMMITTED["ops"][name][j]) for name in overloads.split()}
    assert all(classes == (at_2_14, at_2_15) for classes in got.values()), got


def test_registry_releases_are_where_the_data_says():
    """An override's releases (the registry's `mpsgraph`) are those in which
    one of its overloads has an MPSGraph kernel (G or B); a repair's have a
    stock kernel to repair; a fill's
    (`mps_missing`) those whose MPS backend lacks every one of its overloads
    (a release that lacks some but not all would be a registry bug)."""
    import codegen

    releases = COMMITTED["releases"]
    for entry in codegen.load_registry():
        statuses = [COMMITTED["ops"][o] for o in entry.impl if o in COMMITTED["ops"]]
        assert statuses, entry.name
        if entry.policy == "override":
            assert entry.mps_missing == (), entry.name
            graph = [".".join(r.split(".")[:2]) for i, r in enumerate(releases) if any(s[i] in "GB" for s in statuses)]
            assert list(entry.mpsgraph) == graph, entry.name
            continue
        if entry.policy == "repair":  # a stock kernel exists, and fails for some inputs
            assert entry.mps_missing == (), entry.name
            for release in entry.repairs:
                i = next(i for i, r in enumerate(releases) if r.startswith(release + "."))
                assert all(s[i] in "MGB" for s in statuses), (entry.name, release)
            continue
        missing = []
        for i, release in enumerate(releases):
            states = {"missing" if s[i] in "XP" else "." for s in statuses if s[i] != "-"}
            assert states in ({"missing"}, {"."}, set()), (entry.name, release, states)
            if states == {"missing"}:
                missing.append(release)
        assert list(entry.mps_missing) == missing, entry.name


# ---------------------------------------------------------------------------
# The tool's parts


def test_check_names_each_overload_that_differs(tmp_path):
    tampered = json.loads(json.dumps(COMMITTED))
    first = next(iter(tampered["ops"]))
    last = tampered["ops"][first][-1]
    tampered["ops"][first] = tampered["ops"][first][:-1] + ("X" if last != "X" else "M")
    lines = mps_coverage.differences(tampered, COMMITTED, COMMITTED["releases"])
    assert lines == [f"{COMMITTED['releases'][-1]}: {first}: committed {tampered['ops'][first][-1]}, "
                     f"derived {last}"]
    assert mps_coverage.differences(COMMITTED, COMMITTED, COMMITTED["releases"]) == []
    path = tmp_path / "data.json"
    mps_coverage.write(tampered, str(path))
    assert mps_coverage.load(str(path)) == tampered, "write and load round-trip"
    assert mps_coverage.main(["--check", "--releases", COMMITTED["releases"][-1], "--out", str(path)]) == 1
    assert mps_coverage.main(["--check", "--releases", COMMITTED["releases"][-1]]) == 0


def _arm64(*words: int) -> bytes:
    return struct.pack(f"<{len(words)}I", *words)


def test_scan_code_reads_calls_and_addresses():
    """adrp x8, +1 page; add x8, x8, #0x10; str x8, [x9] with x9 unknown (no
    store); bl +8 (a call out of the stretch); adr x0, +4."""

    class Image:
        def words(self, start, end):
            return struct.unpack(f"<{(end - start) // 4}I", code)

    code = _arm64(0xB0000008,           # adrp x8, #0x1000
                  0x91004108,           # add x8, x8, #0x10
                  0xF9000128,           # str x8, [x9]
                  0x94000004,           # bl #+16
                  0x10000020)           # adr x0, #+4
    events = mps_coverage.scan_code(Image(), 0x4000, 0x4000 + len(code)).events
    assert events == [("addr", 0x4004, 0x5010), ("call", 0x400C, 0x401C), ("addr", 0x4010, 0x4014)]
