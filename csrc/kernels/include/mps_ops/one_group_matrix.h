// For the kernels that give a whole matrix to one threadgroup (eig.metal,
// eigh.metal, svd.metal, geqrf.metal): column-major entries, tree
// reductions over the group, prescaling by a power of two, and the Jacobi
// sweeps' round-robin schedule.
//
// The reductions: every thread passes its value and gets the group's
// result. `threads` must be a power of two (the host's power_of_two_group)
// and `scratch` hold one float per thread; every thread of the group must
// call, so callers keep the call outside any branch that is not uniform.
#pragma once
#include <metal_stdlib>

namespace mps_ops {

// A(i, j) of a column-major matrix with `rows` rows.
inline long column_major(int i, int j, int rows) {
  return long(j) * long(rows) + long(i);
}

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

// The exponent e with largest * 2^-e in [0.5, 1): the power of two that
// brings a matrix whose largest magnitude is `largest` to at most 1, so no
// square or sum of squares after overflows (0 for a zero matrix, and for a
// NaN or an infinity, which the callers report or let spread).
inline int unit_exponent(float largest) {
  int exponent = 0;
  if (metal::isfinite(largest) && largest > 0.0f) {
    metal::frexp(largest, exponent);
  }
  return exponent;
}

// a[0 .. size) times 2^power (exact), shared out over the group, which then
// waits for it.
inline void scale_by_power_of_two(device float* a, long size, int power, uint t, uint threads) {
  for (long e = t; e < size; e += threads) {
    a[e] = metal::ldexp(a[e], power);
  }
  metal::threadgroup_barrier(metal::mem_flags::mem_device);
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
