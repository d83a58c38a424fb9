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

// terms[0] + ... + terms[run - 1] added in pairs, then pairs of pairs (run
// a power of two; terms is overwritten): equal terms sum exactly.
template <uint run>
inline float pairwise_sum(thread float* terms) {
  _Pragma("clang loop unroll(full)")
  for (uint width = run / 2; width > 0; width /= 2) {
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < width; ++k) {
      terms[k] = terms[2 * k] + terms[2 * k + 1];
    }
  }
  return terms[0];
}

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
  // in): the mean as the pairwise sum of the values times 1 / run (exact for
  // a power of two), then their squared deviations. Pairwise, equal values
  // sum exactly (v + v, 2v + 2v, ...), so a run of one value has that mean
  // and no spread: summed in a row, the partial sums rounded at the values'
  // magnitude (a constant slice's variance came out an ulp's square, not 0,
  // and a run of equal values near 1e30 got squared deviations that
  // overflowed: var inf where it is 0). Where the sum is not finite (a value
  // that is not, or finite values above float's maximum / run), neither is
  // m2: callers test m2, as they must for overflowing squares anyway, and
  // take of_run_scaled_terms then. (So the common path costs what the row
  // did: run - 1 adds and a multiply for run multiply-adds. A test of the
  // mean here as well measured 1.5% slower on the H200's square half rows of
  // var, std and var_mean; the first form, the first value plus the others'
  // differences from it, one more instruction per element, 2.5%.)
  template <uint run>
  static state of_run(thread const float* values) {
    static_assert((run & (run - 1)) == 0, "a run's length scales exactly only as a power of two");
    float terms[run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      terms[k] = values[k];
    }
    return with_mean<run>(values, pairwise_sum<run>(terms) * (1.0f / float(run)));
  }
  // The same with the mean summed over the values times 1 / run, which no
  // finite run overflows: the mean is finite exactly where every value is,
  // and otherwise has the class of the sum of the non-finite values (inf,
  // -inf, or NaN where both signs or a NaN meet), as var_mean's and
  // batch_norm_stats' reducers need.
  template <uint run>
  static state of_run_scaled_terms(thread const float* values) {
    float terms[run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      terms[k] = values[k] * (1.0f / float(run));
    }
    return with_mean<run>(values, pairwise_sum<run>(terms));
  }
  template <uint run>
  static state with_mean(thread const float* values, float mean) {
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
