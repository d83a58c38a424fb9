// batch_norm_update_stats: per channel (dim 1) the mean and the biased
// variance over every other dim, Welford in float; with running statistics,
// also running = momentum * batch + (1 - momentum) * running, the running
// variance taking the unbiased batch variance, as the CPU does. Statistics
// are in the parameters' type: the input's, or float for a half/bfloat
// input with float running statistics (the CPU's mixed-dtype rule).
// Non-finite values give what the CPU's sum-then-deviations gives: a mean of
// +inf or -inf where only infinities of that sign occur, NaN where both signs
// or a NaN occur, and a NaN variance whenever the mean is not finite.
#include <metal_stdlib>
#include <mps_ops/moments.h>
using namespace metal;

namespace {

// Welford over the finite values, counts of the others. Flat fields (the
// address-space check copies no nested structs).
struct channel_moments {
  using welford = mps_ops::welford_reducer;
  struct state {
    float count;  // of finite values
    float mean;
    float m2;
    // Counted in float as count is: an int of a channel's 2**31 NaNs would
    // overflow (pieces reach 2**32 - 1 elements, and chunks merge).
    float positive_inf;
    float negative_inf;
    float nan;
  };
  static welford::state finite(state s) { return welford::state{s.count, s.mean, s.m2}; }
  static state with_finite(state s, welford::state w) {
    s.count = w.count;
    s.mean = w.mean;
    s.m2 = w.m2;
    return s;
  }

  // Channels are read about their first element (reduction.h's origins; a
  // float mean of values near 1e4 rounds at 1e-3: the variance of a channel
  // of spread 1 there came out 1e-3 off).
  using origin = mps_ops::origin_first_element;
  static state moved_by(state s, float origin) {
    s.mean += origin;
    return s;
  }

  static state identity() { return state{0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}; }
  static state fold(state s, float v) {
    if (isnan(v)) {
      s.nan += 1.0f;
    } else if (isinf(v)) {
      (v > 0.0f ? s.positive_inf : s.negative_inf) += 1.0f;
    } else {
      s = with_finite(s, welford::fold(finite(s), v));
    }
    return s;
  }
  using runs = mps_ops::runs_merged;  // runs merge by of_run (reduction.h's run_folding)
  // A run's own moments. All finite and summing below float's maximum (as
  // good as always), they are welford_reducer::of_run's; otherwise that
  // mean is infinite or NaN, and only then does the run take the counting
  // below, at twice the instructions.
  template <uint run>
  static state of_run(thread const float* values) {
    const welford::state finite_run = welford::template of_run<run>(values);
    if (!isfinite(finite_run.mean)) {
      return of_run_counted<run>(values);
    }
    return with_finite(identity(), finite_run);
  }
  // The same over a run with a value that is not finite (or finite values
  // whose sum overflows): the moments of its finite values and counts of the
  // others, without branches (folding such a run one value at a time made
  // the kernel too big to inline its slice reduction). The finite values'
  // mean is summed in pairs of values / run, which no finite run
  // overflows and which keeps equal values' mean exact (welford_reducer).
  template <uint run>
  static state of_run_counted(thread const float* values) {
    state s = identity();
    float scaled_terms[run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      const float v = values[k];
      const bool finite = isfinite(v);
      s.count += finite ? 1.0f : 0.0f;
      scaled_terms[k] = finite ? v * (1.0f / float(run)) : 0.0f;
      s.nan += isnan(v) ? 1.0f : 0.0f;
      s.positive_inf += !finite && v > 0.0f ? 1.0f : 0.0f;
      s.negative_inf += !finite && v < 0.0f ? 1.0f : 0.0f;
    }
    const float scaled_sum = mps_ops::pairwise_sum<run>(scaled_terms);
    s.mean = s.count == float(run) ? scaled_sum : s.count == 0.0f ? 0.0f : scaled_sum * (float(run) / s.count);
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      const float deviation = values[k] - s.mean;
      s.m2 += isfinite(values[k]) ? deviation * deviation : 0.0f;
    }
    return s;
  }
  static state merge(state a, state b) {
    state s = with_finite(a, welford::merge(finite(a), finite(b)));
    s.positive_inf += b.positive_inf;
    s.negative_inf += b.negative_inf;
    s.nan += b.nan;
    return s;
  }
  static state shuffle_xor(state s, ushort mask) {
    return state{mps_ops::shuffle_xor(s.count, mask), mps_ops::shuffle_xor(s.mean, mask),
                 mps_ops::shuffle_xor(s.m2, mask), mps_ops::shuffle_xor(s.positive_inf, mask),
                 mps_ops::shuffle_xor(s.negative_inf, mask), mps_ops::shuffle_xor(s.nan, mask)};
  }

  static float mean(state s) {
    if (s.nan > 0.0f || (s.positive_inf > 0.0f && s.negative_inf > 0.0f)) {
      return numeric_limits<float>::quiet_NaN();
    }
    if (s.positive_inf > 0.0f || s.negative_inf > 0.0f) {
      return s.positive_inf > 0.0f ? numeric_limits<float>::infinity() : -numeric_limits<float>::infinity();
    }
    return s.mean;
  }
  static float count(state s) { return s.count + s.positive_inf + s.negative_inf + s.nan; }
  // The centred sum of squares: NaN once a value is not finite.
  static float m2(state s) {
    return s.positive_inf + s.negative_inf + s.nan > 0.0f ? numeric_limits<float>::quiet_NaN() : s.m2;
  }
};

}  // namespace

template <typename In>
struct batch_norm_stats_reducer : channel_moments {
  using params = mps_ops::no_params;
  template <typename Param>
  static void finish(state s, constant params&, device Param& mean, device Param& var) {
    mean = static_cast<Param>(channel_moments::mean(s));
    var = static_cast<Param>(channel_moments::m2(s) / channel_moments::count(s));
  }
};

template <typename Param, typename In>
kernel void batch_norm_update_stats(
    device Param* mean [[buffer(0)]],
    device Param* var [[buffer(1)]],
    device Param* running_mean [[buffer(2)]],
    device Param* running_var [[buffer(3)]],
    constant In* in [[buffer(4)]],
    constant mps_ops::reduction_layout& layout [[buffer(5)]],
    constant float& momentum [[buffer(6)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  using reducer = channel_moments;
  threadgroup reducer::state partials[mps_ops::partial_states];
  mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const mps_ops::slice_thread t = mps_ops::place_thread(layout, group.y, at);
  using origins = mps_ops::origin_rules<reducer>;
  const float origin = origins::of(in, layout, t);
  const reducer::state s =
      reducer::moved_by(mps_ops::reduce_slice_about<reducer>(in, origin, layout, t, partials, at), origin);
  const ulong channel = t.slice;
  if (mps_ops::finishes_slice(t)) {
    const float batch_mean = reducer::mean(s), m2 = reducer::m2(s), n = reducer::count(s);
    mean[channel] = static_cast<Param>(batch_mean);
    var[channel] = static_cast<Param>(m2 / n);
    const float unbiased = m2 / (n - 1.0f);
    running_mean[channel] = static_cast<Param>(
        momentum * batch_mean + (1.0f - momentum) * float(running_mean[channel]));
    running_var[channel] = static_cast<Param>(
        momentum * unbiased + (1.0f - momentum) * float(running_var[channel]));
  }
}

// Without running statistics: mean and biased variance only, in the input's
// dtype (float statistics of a half or bfloat input come only with float
// running statistics: batch_norm_stats.mm).
MPS_OPS_FOR_FLOATING(REGISTER_REDUCE_TWO_OP_SAME_TYPE, batch_norm_stats)

#define REGISTER_BATCH_NORM_UPDATE_STATS(PARAM, IN)                                           \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(batch_norm_update_stats, reduce, PARAM, IN),          \
                      batch_norm_update_stats, PARAM, IN)
REGISTER_BATCH_NORM_UPDATE_STATS(half, half)
REGISTER_BATCH_NORM_UPDATE_STATS(bfloat, bfloat)
REGISTER_BATCH_NORM_UPDATE_STATS(float, float)
REGISTER_BATCH_NORM_UPDATE_STATS(float, half)
REGISTER_BATCH_NORM_UPDATE_STATS(float, bfloat)

// Statistics in float for a half or bfloat input (batch_norm.metal's
// forward: save_invstd from the unrounded variance, as the CPU computes it).
REGISTER_REDUCE_TWO_OP(batch_norm_stats, float, half)
REGISTER_REDUCE_TWO_OP(batch_norm_stats, float, bfloat)
