"""benchmarks/bench_gpu.py's parts that need no GPU: the case table covers
issue 13's families with inputs of at least 256 MB, the bound rule, the
table and chart from a recorded run, and a bare run off the CUDA backend
measuring nothing."""

from __future__ import annotations

import json
import subprocess
import time
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_gpu  # noqa: E402
import gpu_cases  # noqa: E402

FAMILIES = ("elementwise dense", "elementwise strided", "elementwise scalar_broadcast",
            "reduction last dim, short slices", "reduction last dim, long slices", "reduction middle dim",
            "reduction all dims", "pooling forward", "pooling backward", "pdist", "losses", "masked softmax",
            "segment_reduce", "embedding_renorm", "mode last dim")


def test_cases_cover_the_families_in_float32_and_half_and_bfloat16():
    cases = gpu_cases.all_cases()
    families = {c.family for c in cases}
    assert set(FAMILIES) <= families
    for family in ("elementwise dense", "reduction last dim, short slices", "pooling forward"):
        assert {torch.float32, torch.float16, torch.bfloat16} <= {c.dtype for c in cases if c.family == family}


def test_every_case_reads_at_least_the_minimum_input_size():
    for case in gpu_cases.all_cases():
        if (case.kernel.startswith(("_pdist", "_cdist")) or case.kernel == "logspace"
                or case.family in ("matmul", "linalg")):
            # quadratic in their rows (8 M or 3 M distances instead); an
            # output only; cubic (a transformer layer's product, or batches
            # of matrices one threadgroup serves, instead)
            continue
        shapes = gpu_cases.input_shapes(case)
        itemsize = torch.empty((), dtype=case.dtype).element_size()
        largest = max(torch.Size(s).numel() for s in shapes) * itemsize
        assert largest >= gpu_cases.MIN_INPUT_BYTES, (case.family, case.kernel, shapes)


@pytest.mark.parametrize("ours, theirs, high, bound, met", [
    (2400, 2900, False, "memory", True),      # 0.83x of a kernel at 97% of copy
    (2000, 2900, False, "memory", False),     # 0.69x
    (900, 1000, False, "weak-baseline", False),   # torch at 33% of copy: floor min(1500, 1000)
    (1000, 1000, False, "weak-baseline", True),
    (200, 900, True, "compute", None),        # heavy arithmetic, torch below 40% of copy
])
def test_bound_rule(ours, theirs, high, bound, met):
    row = bench_gpu.classify(ours, theirs, 3000.0, high)
    assert row["bound"] == bound
    assert row.get("target_met") is met
    assert row["ratio"] == round(ours / theirs, 3)


def test_table_and_chart_from_a_recorded_run(tmp_path):
    rows = [dict(family="elementwise dense", kernel="heaviside", shape=[16384, 4096], dtype="float32",
                 copy_gbps=3000.0, ours_gbps=2400.0, torch_gbps=2900.0,
                 **bench_gpu.classify(2400.0, 2900.0, 3000.0, False)),
            dict(family="reduction middle dim", kernel="var", shape=[256, 1024, 256], dtype="float16",
                 copy_gbps=3000.0, ours_gbps=700.0, torch_gbps=2600.0,
                 **bench_gpu.classify(700.0, 2600.0, 3000.0, False)),
            dict(family="losses", kernel="nll_loss_forward", shape=[65536, 1024], dtype="float32",
                 copy_gbps=3000.0, ours_gbps=2000.0, torch_gbps=5000.0, waits_for_gpu=True,
                 torch_synced_gbps=1600.0, ratio_to_synced=1.25, ours_deferred_gbps=4500.0, ratio_deferred=0.9,
                 waits_when_deferred=False, **bench_gpu.classify(2000.0, 5000.0, 3000.0, False)),
            dict(family="pdist", kernel="_pdist_forward", shape=[4096, 256], dtype="float32", copy_gbps=3000.0,
                 bound="none", error="ours ran no kernel of ours")]
    path = tmp_path / "bench_gpu.json"
    path.write_text(json.dumps({"device": "a GPU", "torch": "2.x", "copy_gbps": 3000.0, "rows": rows}))
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--from-json", str(path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "memory 1/3 at >= 0.8x torch" in done.stdout
    assert ("waiting at the call 1 (min ratio to torch + sync 1.25; checks deferred: min ratio 0.9, "
            "1 at >= 0.8x torch)") in done.stdout
    table = path.with_suffix(".md").read_text()
    assert "| 0.4 | memory | **below** (waits at the call: 1.25x torch + sync; checks deferred: 0.9x torch) |" in table
    assert "| reduction middle dim | var | 256x1024x256 | float16 | 700.0 | 2600.0 | 0.269 | memory | **below** |" in table
    assert "ours ran no kernel of ours" in table


def test_off_the_cuda_backend_nothing_is_measured(tmp_path):
    import mps_ops

    if mps_ops.backend == "cuda":
        pytest.skip("the CUDA backend measures")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--json",
                           str(tmp_path / "x.json")], capture_output=True, text=True)
    assert done.returncode == 2
    assert "nothing measured" in done.stdout
    assert not (tmp_path / "x.json").exists()


def test_a_call_that_waits_for_the_gpu_is_told_from_one_that_enqueues(monkeypatch):
    """waits_for_gpu against a stand-in GPU: _sleep queues seconds of work,
    synchronize drains it; a call that waits drains it too (a flag read back),
    one that enqueues returns at once."""
    queued = []
    drain = lambda: (time.sleep(sum(queued)), queued.clear())  # noqa: E731
    monkeypatch.setattr(torch.cuda, "synchronize", drain)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: queued.append(cycles / 1e9))
    assert bench_gpu.waits_for_gpu(drain, 1e9)
    assert not bench_gpu.waits_for_gpu(lambda: None, 1e9)


def test_compute_rows_of_any_family_get_their_accuracy_on_a_few_rows():
    """pdist's row (compute on the GPU) is judged against float64 on its
    first ACCURACY_ROWS points, not on a flat cut of them."""
    from helpers import to_device
    from mps_ops import profile

    case = next(c for c in gpu_cases.all_cases(["pdist"]) if c.kernel == "_pdist_forward")
    inputs = to_device(case.maker())
    assert [tuple(t.shape) for t in bench_gpu.accuracy_inputs(case, inputs)] == [(bench_gpu.ACCURACY_ROWS, 256)]
    with profile() as prof:
        errors = bench_gpu.accuracy(case, inputs)
    assert any(d.kernel.startswith("pdist_forward") for d in prof.dispatches)
    assert 0 < errors["ours_max_rel_error"] < 1e-5
    assert errors["torch_max_rel_error"] < 1e-5


def test_a_decomposition_is_judged_normwise():
    """A matrix result's accuracy is LAPACK's normwise error: element by
    element, an entry of geqrf's packed factors near zero would read as a
    relative error of order one."""
    from helpers import seeded_randn, to_device

    case = next(c for c in gpu_cases.all_cases(["linalg"]) if c.kernel == "geqrf")
    assert case.matrix_results
    errors = bench_gpu.accuracy(case, to_device([seeded_randn(2, 12, 6, seed=3)]))
    assert set(errors) == {"ours_normwise_error", "torch_normwise_error"}
    assert 0 < errors["ours_normwise_error"] < 1e-6
    assert errors["torch_normwise_error"] < 1e-6


def test_a_compute_row_slower_than_a_tenth_of_a_gb_per_second_keeps_its_ratio():
    """GB/s carry four significant figures: one decimal place had rounded a
    decomposition's 0.04 GB/s to 0.0 (a division by zero on the H200) and
    two different speeds to the same 0.1."""
    assert bench_gpu._gbps(4_000_000, 0.1) == 0.04
    assert bench_gpu._gbps(4_000_000, 0.12) == 0.03333
    assert bench_gpu.classify(0.04, 0.03333, 4000.0, True)["ratio"] == 1.2
