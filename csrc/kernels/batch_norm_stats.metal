// batch_norm_update_stats: per channel (dim 1) the mean and the biased
// variance over every other dim, Welford in float; with running statistics,
// also running = momentum * batch + (1 - momentum) * running, the running
// variance taking the unbiased batch variance, as the CPU does. Statistics
// are in the parameters' type: the input's, or float for a half/bfloat
// input with float running statistics (the CPU's mixed-dtype rule).
#include <metal_stdlib>
#include <mps_ops/moments.h>
using namespace metal;


template <typename In>
struct batch_norm_stats_reducer : mps_ops::welford_reducer {
  using params = mps_ops::no_params;
  template <typename Param>
  static void finish(state s, constant params&, device Param& mean, device Param& var) {
    mean = static_cast<Param>(s.mean);
    var = static_cast<Param>(s.m2 / s.count);
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
  using reducer = mps_ops::welford_reducer;
  threadgroup reducer::state partials[32];
  mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const long channel = long(group.y);
  const reducer::state s = mps_ops::merge_threadgroup<reducer>(
      mps_ops::fold_slice<reducer>(in, layout, channel, at), partials, at);
  if (index == 0) {
    mean[channel] = static_cast<Param>(s.mean);
    var[channel] = static_cast<Param>(s.m2 / s.count);
    const float unbiased = s.m2 / (s.count - 1.0f);
    running_mean[channel] = static_cast<Param>(
        momentum * s.mean + (1.0f - momentum) * float(running_mean[channel]));
    running_var[channel] = static_cast<Param>(
        momentum * unbiased + (1.0f - momentum) * float(running_var[channel]));
  }
}

// Without running statistics: mean and biased variance only.
#define REGISTER_BATCH_NORM_STATS(PARAM, IN)                                                  \
  REGISTER_REDUCE_TWO_OP(batch_norm_stats, PARAM, IN)                                         \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(batch_norm_update_stats, reduce, PARAM, IN),          \
                      batch_norm_update_stats, PARAM, IN)
REGISTER_BATCH_NORM_STATS(float, float)
REGISTER_BATCH_NORM_STATS(half, half)
REGISTER_BATCH_NORM_STATS(bfloat, bfloat)
REGISTER_BATCH_NORM_STATS(float, half)
REGISTER_BATCH_NORM_STATS(float, bfloat)
