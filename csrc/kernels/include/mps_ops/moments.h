// Welford's running mean and centred sum of squares, as a reducer for
// reduction.h (var, std, batch_norm_update_stats). Counts are float: exact to
// 2**24 elements per thread's share, and the merge weights are ratios.
// Where the difference of two finite values overflows (values near float's
// limits), the mean moves by the difference of scaled terms instead, so it
// stays finite (the CPU sums in double there).
#pragma once
#include <metal_stdlib>

#include <mps_ops/reduction.h>

namespace mps_ops {

struct welford_reducer {
  struct state {
    float count;
    float mean;
    float m2;
  };
  static state identity() { return state{0.0f, 0.0f, 0.0f}; }
  static state fold(state s, float v) {
    const float count = s.count + 1.0f;
    const float delta = v - s.mean;
    const float mean = metal::isfinite(delta) ? s.mean + delta / count : s.mean + (v / count - s.mean / count);
    return state{count, mean, s.m2 + delta * (v - mean)};
  }
  using runs = mps_ops::runs_merged;  // runs merge by of_run (reduction.h's run_folding)
  // The moments of a run of values alone (reduction.h's run_folding merges them
  // in): the mean as the first value plus the others' differences from it
  // over run, then their squared deviations. The plain sum of the values
  // over run rounded at their magnitude: a run of equal values near 1e30 got
  // a mean an ulp off, whose squared deviations overflowed float where the
  // variance is 0. Every term is scaled by 1 / (2 run) and the result
  // doubled (powers of two: exact), so no finite run overflows (each
  // difference is below twice float's maximum): the mean is finite exactly
  // where every value is, and otherwise has the class of the sum of the
  // non-finite values (inf, -inf, or NaN where both signs or a NaN meet),
  // as var_mean's and batch_norm_stats' reducers need. A non-finite first
  // value is no reference: the values themselves are summed then.
  template <uint run>
  static state of_run(thread const float* values) {
    static_assert((run & (run - 1)) == 0, "a run's length scales exactly only as a power of two");
    constexpr float half_share = 1.0f / float(2 * run);
    const float reference = metal::isfinite(values[0]) ? values[0] : 0.0f;
    float half_offset = 0.0f;
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      half_offset += values[k] * half_share - reference * half_share;
    }
    const float mean = 2.0f * (reference * 0.5f + half_offset);
    float m2 = 0.0f;
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      const float deviation = values[k] - mean;
      m2 += deviation * deviation;
    }
    return state{float(run), mean, m2};
  }
  static state merge(state a, state b) {
    if (b.count == 0.0f) {
      return a;
    }
    if (a.count == 0.0f) {
      return b;
    }
    const float count = a.count + b.count;
    const float b_share = b.count / count;
    const float delta = b.mean - a.mean;
    const float mean = metal::isfinite(delta) ? a.mean + delta * b_share : a.mean * (a.count / count) + b.mean * b_share;
    return state{count, mean, a.m2 + b.m2 + delta * delta * a.count * b_share};
  }
  static state shuffle_xor(state s, ushort mask) {
    return state{mps_ops::shuffle_xor(s.count, mask), mps_ops::shuffle_xor(s.mean, mask),
                 mps_ops::shuffle_xor(s.m2, mask)};
  }
};

}  // namespace mps_ops
