"""The benchmark scripts run and say what they should. Not timing tests: no
figure is compared with a target here, only checked to be a positive number.

The three scripts start together (each pays the torch import) and are read
once per module."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import mps_ops

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
ON_METAL = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()
                and mps_ops.backend == "metal")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    commands = {
        "work": [sys.executable, str(BENCH / "bench_ops.py"), "--work"],
        "host": [sys.executable, str(BENCH / "bench_host.py"), "--quick", "--no-cpp",
                 "--json", str(out / "host.json")],
    }
    if not ON_METAL:  # on a Mac the bare run times every op: far too long for a test
        commands["bare"] = [sys.executable, str(BENCH / "bench_ops.py")]
    procs = {k: subprocess.Popen(c, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for k, c in commands.items()}
    results = {}
    for key, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        results[key] = (proc.returncode, stdout, stderr)
    results["host_json"] = out / "host.json"
    return results


def _registry_names():
    return [r.name.split("::", 1)[1] for r in mps_ops.ops()]


def test_work_table_lists_every_registry_op_and_passes(runs):
    rc, out, err = runs["work"]
    assert rc == 0, out + err
    rows = [line.split() for line in out.splitlines()]
    ops_in_table = {r[0] for r in rows if r}
    assert set(_registry_names()) <= ops_in_table
    assert "FAIL" not in out
    # Element-wise ops are held to the work limit on contiguous and transposed
    # inputs (two checked rows each, at least); the rest are reported.
    sys.path.insert(0, str(BENCH))
    import bench_ops

    elementwise = {name for name, spec in bench_ops.OPS.items()
                   if spec.kind in ("elementwise", "inplace_only")}
    checked = [r for r in rows if len(r) > 10 and r[10] == "ok"]
    for name in elementwise:
        assert sum(r[0] == name for r in checked) >= 2, name
    assert "bytes bound" in out and "to move" in out


@pytest.mark.skipif(ON_METAL, reason="the bare run times every op on a Mac")
def test_bare_run_without_metal_says_timing_needs_a_mac(runs):
    rc, out, err = runs["bare"]
    assert rc == 0, out + err
    first = out.splitlines()[0]
    assert "timing needs a Mac" in first and "No timings were measured" in first
    assert "work figures" in out  # what it can do instead
    assert " us" not in out and "GB/s" not in out  # no invented timing


@pytest.mark.skipif(mps_ops.backend != "emulator", reason="dry run is the emulator's")
def test_host_bench_writes_positive_figures(runs):
    rc, out, err = runs["host"]
    assert rc == 0, out + err
    data = json.loads(runs["host_json"].read_text())
    for key in ("us_per_call", "aten_cpu_us_per_call", "ratio_to_aten_cpu"):
        value = data[key]
        assert isinstance(value, float) and math.isfinite(value) and value > 0, (key, value)
    assert math.isclose(data["ratio_to_aten_cpu"], data["us_per_call"] / data["aten_cpu_us_per_call"])
    assert {"dispatcher", "emulate()"} <= set(data["variants"])
    assert "emulate()" in out and "dispatcher" in out
