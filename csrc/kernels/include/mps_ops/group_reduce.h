// Tree reductions over one threadgroup, for the kernels that give a whole
// matrix to one group (eigh.metal, svd.metal, geqrf.metal): every thread
// passes its value and gets the group's result. `threads` must be a power
// of two (the host's power_of_two_group) and `scratch` hold one float per
// thread; every thread of the group must call, so callers keep the call
// outside any branch that is not uniform.
#pragma once
#include <metal_stdlib>

namespace mps_ops {

inline float group_total(float mine, threadgroup float* scratch, uint t, uint threads) {
  scratch[t] = mine;
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  for (uint half_threads = threads / 2; half_threads > 0; half_threads /= 2) {
    if (t < half_threads) {
      scratch[t] += scratch[t + half_threads];
    }
    metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  }
  const float total = scratch[0];
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);  // the scratch is reused next
  return total;
}

inline float group_largest(float mine, threadgroup float* scratch, uint t, uint threads) {
  scratch[t] = mine;
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  for (uint half_threads = threads / 2; half_threads > 0; half_threads /= 2) {
    if (t < half_threads) {
      scratch[t] = metal::max(scratch[t], scratch[t + half_threads]);
    }
    metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  }
  const float largest = scratch[0];
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  return largest;
}

// The pair of indices pair-th in step `step` of a Jacobi sweep over m (even)
// indices, the round-robin tournament: (step, m - 1) first, then
// (step + k, step - k) modulo m - 1. Over steps 0 .. m - 2 every pair meets
// once, and within a step the pairs are disjoint.
inline int2 round_robin_pair(int step, int pair, int m) {
  if (pair == 0) {
    return int2(step, m - 1);
  }
  const int turning = m - 1;
  return int2((step + pair) % turning, (step - pair + turning) % turning);
}

}  // namespace mps_ops
