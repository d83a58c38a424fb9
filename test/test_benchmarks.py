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
        # With the error-check mode the Mac comparison sets (it takes effect before timing).
        commands["bare"] = [sys.executable, str(BENCH / "bench_ops.py"), "--error-checks", "deferred"]
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


def _override_record(name):
    return next(r for r in mps_ops.ops() if r.name == f"aten::{name}")


def test_override_timing_toggles_each_override_in_one_process():
    """timing.time_all's path for an override op, driven off a Mac (the
    emulator, or the CUDA backend): torch's own kernel timed with the override off, ours with
    it on, in one process (a fake measure: no timing here)."""
    from types import SimpleNamespace

    from mps_ops.testing import device, emulate

    sys.path.insert(0, str(BENCH))
    import timing

    seen = []

    def measure(timer, stmt, env, min_run_time):
        with mps_ops.profile() as prof, emulate():
            exec(stmt, env)
        ours = any(d.kernel.startswith("threshold_") for d in prof.dispatches)
        seen.append((_override_record("threshold").active, ours))
        return SimpleNamespace(median=1e-3)

    opts = SimpleNamespace(ops=["threshold"], dtypes=[torch.float32], layouts=["dense"], sizes=[1000],
                           min_run_time=0.01)
    try:
        _, rows = timing.time_all(opts, target=device(), sync=lambda: None, measure=measure)
    finally:
        mps_ops.enable_overrides()
    assert seen == [(False, False), (True, True)]
    assert len(rows) == 1 and rows[0]["stock"] == "stock mps" and rows[0]["speedup"] == 1.0


def test_override_memory_mode_toggles_each_override_in_one_process(tmp_path):
    """override_memory.memory_rows, driven off a Mac: N distinct shapes with
    the override off, then on; growth is what the allocated() hook reports."""
    from types import SimpleNamespace

    from mps_ops.testing import device

    sys.path.insert(0, str(BENCH))
    import override_memory

    calls, active = [], []
    allocated = iter([0, 300, 1000, 1001])  # stock: +300 bytes, ours: +1

    def sync():
        calls.append(1)
        active.append(_override_record("threshold_backward").active)

    opts = SimpleNamespace(ops=["threshold_backward"])
    try:
        rows = override_memory.memory_rows(opts, 3, target=device(), sync=sync,
                                           allocated=lambda: next(allocated), release=lambda: None)
    finally:
        mps_ops.enable_overrides()
    assert rows == [{"op": "threshold_backward", "shapes": 3, "stock_growth_bytes": 300, "ours_growth_bytes": 1}]
    # A sync before, one per shape, one after: off for the stock pass, on for ours.
    assert active == [False] * 5 + [True] * 5
    assert len({s for s in override_memory.distinct_shapes(50)}) == 50
    markdown = override_memory.write_memory(rows, str(tmp_path))
    assert "| threshold_backward | 3 | 0.0 | 0.0 |" in markdown
    assert json.loads((tmp_path / "bench_ops_memory.json").read_text()) == rows
