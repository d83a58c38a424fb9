"""Emulated threads per second: how fast the CPU emulator runs Metal kernels.

    python benchmarks/bench_emulator.py [--json PATH]

Targets (issue: emulator): barrier-free kernels >= 100 M threads/s; kernels
with barriers and SIMD-group collectives >= 3 M threads/s. Checked mode off
(it copies every buffer). These are CPU figures of the emulator, not GPU
figures: they say nothing about speed on a Mac.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

import mps_ops

SOURCE = """
#include <metal_stdlib>
using namespace metal;

kernel void axpb(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
  y[i] = x[i] * 2.0f + 1.0f;
}

kernel void block_sum(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                      uint i [[thread_position_in_grid]], uint g [[threadgroup_position_in_grid]],
                      uint lane [[thread_index_in_simdgroup]],
                      uint sg [[simdgroup_index_in_threadgroup]],
                      uint n_sg [[simdgroups_per_threadgroup]]) {
  threadgroup float partial[32];
  float s = simd_sum(x[i]);
  if (lane == 0) partial[sg] = s;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    float v = simd_sum(lane < n_sg ? partial[lane] : 0.0f);
    if (lane == 0) out[g] = v;
  }
}
"""


def threads_per_second(fn, threads: int, min_seconds: float = 1.0) -> float:
    fn()  # warm-up: library load, first-touch of memory
    runs, start = 0, time.perf_counter()
    while True:
        fn()
        runs += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return threads * runs / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    if mps_ops.backend != "emulator":
        print(f"backend is {mps_ops.backend}: this benchmark measures the emulator only")
        return 0
    lib = mps_ops.compile_shader(SOURCE)
    n = 1 << 24
    x = torch.randn(n)
    y = torch.empty_like(x)
    sums = torch.empty(n // 256)
    results = {}
    with mps_ops.emulator.checked(False):
        results["barrier_free_threads_per_s"] = threads_per_second(
            lambda: lib.axpb(x, y, group_size=256), n)
        m = 1 << 20
        results["barrier_simd_threads_per_s"] = threads_per_second(
            lambda: lib.block_sum(x[:m], sums, group_size=256), m)
        results["op_ndtri_elements_per_s"] = threads_per_second(
            lambda: _run_op(torch.special.ndtri, x.sigmoid()), n)
    for key, value in results.items():
        print(f"{key:32s} {value / 1e6:10.1f} M/s")
    print("targets: barrier-free >= 100 M/s, barriers + SIMD >= 3 M/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


def _run_op(fn, x):
    with mps_ops.testing.emulate():
        fn(x)


if __name__ == "__main__":
    import mps_ops.testing  # noqa: F401

    raise SystemExit(main())
