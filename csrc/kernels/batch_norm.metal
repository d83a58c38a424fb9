// batch_norm's forward and backward (the override ops of
// csrc/operations/batch_norm.mm) over a dense input, contiguous or
// channels-last, in three steps each:
//   forward   the batch's per-channel mean and variance (training; the
//             threadgroup reductions of batch_norm_stats.metal), then one
//             thread per channel (batch_norm_channels: save_mean,
//             save_invstd, the running statistics' update, the channel's
//             coefficients), then one pass over the elements
//             (batch_norm_apply: (x - mean) * invstd * weight + bias);
//   backward  per channel the sums of grad_out and of grad_out * (x - mean)
//             in one reduction over both (batch_norm_backward_sums), then
//             one thread per channel (the weight and bias gradients, the
//             coefficients), then one pass over the elements.
// Everything computes in float. The element passes keep the centred form
// (x - mean) the CPU's reference formula has: a scale-and-shift
// x * a + b loses the digits of x - mean where |mean| >> std.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/per_element.h>
#include <mps_ops/reduction.h>
#include "batch_norm_params.h"
using namespace metal;

namespace {

// The CPU's InvStd for the batch's variance: 0 where the variance and eps
// are both 0. (Its evaluation paths take 1 / sqrt(running_var + eps) as it
// is: infinite there.)
inline float inverse_std(float var, float eps) {
  return var == 0.0f && eps == 0.0f ? 0.0f : 1.0f / sqrt(var + eps);
}

// An element's place in its channel: i % inner and (i / inner) % channels,
// moved a tile on without division (batch_norm_apply_params).
struct channel_walk {
  uint r;
  uint channel;
};
inline channel_walk channel_of(uint i, mps_ops::batch_norm_apply_params p) {
  return channel_walk{i % p.inner, (i / p.inner) % p.channels};
}
inline channel_walk next(channel_walk w, mps_ops::batch_norm_apply_params p) {
  uint r = w.r + p.step_r;
  const bool carry = r >= p.inner;
  r = carry ? r - p.inner : r;
  // At most 2 * channels - 1: one wrap.
  const uint c = w.channel + p.step_c + (carry ? 1u : 0u);
  return channel_walk{r, c >= p.channels ? c - p.channels : c};
}

}  // namespace

// Forward, one thread per channel. Training: the batch's statistics (float,
// from the reduction) stored as save_mean and save_invstd, the running
// statistics updated as the CPU does (the variance unbiased), and the
// element pass's coefficients from the unrounded statistics (a half mean
// could equal an element exactly where the true one does not: 0 * an
// infinite weight). Evaluation: the running statistics'.
template <typename Param>
kernel void batch_norm_channels(
    device Param* save_mean [[buffer(0)]],
    device Param* save_invstd [[buffer(1)]],
    device Param* running_mean [[buffer(2)]],
    device Param* running_var [[buffer(3)]],
    device float* coefficients [[buffer(4)]],
    constant float* batch_mean [[buffer(5)]],
    constant float* batch_var [[buffer(6)]],
    constant Param* weight [[buffer(7)]],
    constant Param* bias [[buffer(8)]],
    constant mps_ops::batch_norm_channel_params& params [[buffer(9)]],
    uint c [[thread_position_in_grid]]) {
  const mps_ops::batch_norm_channel_params p = params;
  if (c >= p.channels) {
    return;
  }
  float mean, invstd;
  if (p.training != 0) {
    const Param stored_mean = static_cast<Param>(batch_mean[c]);
    const Param stored_invstd = static_cast<Param>(inverse_std(batch_var[c], p.eps));
    save_mean[c] = stored_mean;
    save_invstd[c] = stored_invstd;
    if (p.has_running != 0) {
      const float keep = 1.0f - p.momentum;
      running_mean[c] = static_cast<Param>(p.momentum * batch_mean[c] + keep * float(running_mean[c]));
      running_var[c] = static_cast<Param>(p.momentum * (batch_var[c] * p.unbias) + keep * float(running_var[c]));
    }
    mean = batch_mean[c];
    invstd = inverse_std(batch_var[c], p.eps);
  } else {
    mean = float(running_mean[c]);
    invstd = 1.0f / sqrt(float(running_var[c]) + p.eps);
  }
  const float scale = p.has_weight != 0 ? invstd * float(weight[c]) : invstd;
  const float shift = p.has_bias != 0 ? float(bias[c]) : 0.0f;
  // An infinite or NaN scale (an infinite weight, a zero variance without
  // eps) takes the CPU's x * scale + (bias - mean * scale): NaN where the
  // infinities cancel, where the centred form would give 0 * inf or +-inf.
  const bool centred = isfinite(scale);
  device float* out = coefficients + ulong(c) * mps_ops::batch_norm_coefficients;  // 2**30 channels and more
  out[0] = centred ? mean : 0.0f;
  out[1] = scale;
  out[2] = centred ? shift : shift - mean * scale;
  out[3] = 0.0f;
}

// Forward's element pass: up to K elements per thread in per_element.h's
// tiles, all loaded before any is computed (several loads in flight per
// thread, on an Apple GPU as on any other). A channel's coefficients come
// in one vector load per element, where three or four scalar loads
// outnumbered the element's own load and store (the channels-last pass ran
// at 56% of DRAM bandwidth on an H200).
// (The slot stays float*, the coefficients tensor's element type; the stubs
// allocate that tensor fresh, so it is 16-byte aligned.)
static_assert(mps_ops::batch_norm_coefficients == 4, "the element passes load a channel's coefficients as a float4");
template <typename T>
kernel void batch_norm_apply(
    device T* out [[buffer(0)]],
    constant T* x [[buffer(1)]],
    constant float* coefficients [[buffer(2)]],
    constant mps_ops::batch_norm_apply_params& params [[buffer(3)]],
    uint thread_index [[thread_position_in_grid]]) {
  constexpr uint K = mps_ops::elements_per_thread(sizeof(T));
  const uint first = mps_ops::per_element_first<K>(thread_index), step = mps_ops::elementwise_tile;
  const mps_ops::batch_norm_apply_params p = params;
  T value[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * step;
    if (i < p.count) {
      value[k] = x[i];
    }
  }
  channel_walk w = channel_of(first, p);
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * step;
    if (i < p.count) {
      const float4 c = reinterpret_cast<constant float4*>(coefficients)[w.channel];
      out[i] = static_cast<T>((float(value[k]) - c.x) * c.y + c.z);
    }
    w = next(w, p);
  }
}

// Backward's reduction reads grad_out beside the input centred on its
// channel's mean (a reduction.h source of two inputs of one layout).
struct grad_and_centred {
  float grad;
  float centred;
};
template <typename In>
struct centred_pair {
  using value = grad_and_centred;
  static constexpr uint element_bytes() { return sizeof(In); }
  constant In* grad;
  constant In* x;
  float mean;
};
template <typename In, typename I>
inline grad_and_centred load(centred_pair<In> source, I offset) {
  return grad_and_centred{float(source.grad[offset]), float(source.x[offset]) - source.mean};
}

// Per channel: sum(grad_out) and sum(grad_out * (x - mean)), the CPU's sum
// and dotp. Param only names the instantiation (the merge kernel, which
// reads no parameters, is instantiated once per host name).
template <typename Param>
struct backward_sums {
  using params = mps_ops::no_params;
  struct state {
    float grad_sum;
    float dot;
  };
  static state identity() { return state{0.0f, 0.0f}; }
  static state fold(state s, grad_and_centred v) { return state{s.grad_sum + v.grad, s.dot + v.grad * v.centred}; }
  static state merge(state a, state b) { return state{a.grad_sum + b.grad_sum, a.dot + b.dot}; }
  static state shuffle_xor(state s, ushort mask) {
    return state{mps_ops::shuffle_xor(s.grad_sum, mask), mps_ops::shuffle_xor(s.dot, mask)};
  }
  template <typename Out>
  static void finish(state s, constant params&, device Out& grad_sum, device Out& dot) {
    grad_sum = s.grad_sum;
    dot = s.dot;
  }
};

// reduction.h's reduce_two over the pair source: the sums in float, each
// channel's chunk states (where the host split long channels) merged by
// reduce_two_merge.
template <typename Param, typename In>
kernel void batch_norm_backward_sums(
    device float* grad_sum [[buffer(0)]],
    device float* dot [[buffer(1)]],
    device uchar* chunk_states [[buffer(2)]],
    constant In* grad [[buffer(3)]],
    constant In* x [[buffer(4)]],
    constant float* mean [[buffer(5)]],
    constant mps_ops::reduction_layout& layout [[buffer(6)]],
    constant mps_ops::no_params& params [[buffer(7)]],
    uint3 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint3 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  using reducer = backward_sums<Param>;
  threadgroup typename reducer::state partials[mps_ops::partial_states];
  mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const mps_ops::slice_thread t = mps_ops::place_thread(layout, group.y, at);
  const float channel_mean = t.active ? mean[t.slice] : 0.0f;
  const typename reducer::state s =
      mps_ops::reduce_slice_of<reducer>(centred_pair<In>{grad, x, channel_mean}, layout, t, partials, at, group.z);
  if (mps_ops::finishes_slice(t)) {
    if (layout.chunk_shift != 0) {
      mps_ops::store_chunk_state<reducer>(chunk_states, layout, t.slice, group.z, s);
    } else {
      reducer::template finish<float>(s, params, grad_sum[t.slice], dot[t.slice]);
    }
  }
}

// Backward, one thread per channel: the weight's gradient dotp * invstd and
// the bias's sum (as asked), and the element pass's coefficients: mean,
// k = dotp * invstd^2 / n, grad_mean = sum / n, invstd * weight. invstd is
// save_invstd in training, from the running variance otherwise. The
// statistics come as float (the host converts the others: CUDA's forward,
// and maybe MPS's, keeps a half input's in float).
template <typename Param>
kernel void batch_norm_backward_channels(
    device Param* grad_weight [[buffer(0)]],
    device Param* grad_bias [[buffer(1)]],
    device float* coefficients [[buffer(2)]],
    constant float* grad_sum [[buffer(3)]],
    constant float* dot [[buffer(4)]],
    constant float* mean [[buffer(5)]],
    constant float* spread [[buffer(6)]],
    constant Param* weight [[buffer(7)]],
    constant mps_ops::batch_norm_channel_params& params [[buffer(8)]],
    uint c [[thread_position_in_grid]]) {
  const mps_ops::batch_norm_channel_params p = params;
  if (c >= p.channels) {
    return;
  }
  const float invstd = p.training != 0 ? spread[c] : 1.0f / sqrt(spread[c] + p.eps);
  const float sum = grad_sum[c], dotp = dot[c];
  if (p.want_weight != 0) {
    grad_weight[c] = static_cast<Param>(dotp * invstd);
  }
  if (p.want_bias != 0) {
    grad_bias[c] = static_cast<Param>(sum);
  }
  device float* out = coefficients + ulong(c) * mps_ops::batch_norm_coefficients;  // 2**30 channels and more
  out[0] = mean[c];
  out[1] = dotp * invstd * invstd * p.inv_count;
  out[2] = sum * p.inv_count;
  out[3] = p.has_weight != 0 ? invstd * float(weight[c]) : invstd;
}

// Backward's element pass: training (grad_out - grad_mean - (x - mean) * k)
// * invstd * weight, evaluation grad_out * invstd * weight (x unread);
// weight_norm's g / norm * grad_w - sum / norm^2 * v; group_norm's
// g * rstd * weight - (x - mean) * k - shift (channel_formula).
// Loads, then results, then stores: on a target where a store may alias the
// coefficients (CUDA's generic pointers; MSL's disjoint constant and device
// address spaces may tell Apple's compiler otherwise, unverified), each
// element's coefficient load in one loop waited behind the previous
// element's store (H200, bfloat16 training: ncu
// read 54 instructions per element and 35% of DRAM bandwidth, 477 us against
// torch's 380). Whole tiles go unchecked (per_element_whole_tile) and the
// formula is a constant of each instantiation. H200, against the one loop in
// one start: training half 1.02 -> 1.12x torch's CUDA kernel and bfloat16
// 1.01 -> 1.10 (torch's is their floor), float32 0.91 -> 0.89; evaluation
// 5-7% slower, at 5.4-7.4x. The forward's pass keeps its one loop: the same
// steps took its 2-byte instantiations from 30 to 42 registers and bfloat16
// from 1.54x to 1.29x.
template <bool Whole, int Formula, typename T>
inline void batch_norm_backward_apply_tile(device T* grad_input, constant T* grad_out, constant T* x,
                                           constant float* coefficients,
                                           thread const mps_ops::batch_norm_apply_params& p, uint first) {
  constexpr uint K = mps_ops::elements_per_thread(sizeof(T));
  const uint step = mps_ops::elementwise_tile;
  T grad[K], value[K], result[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * step;
    if (Whole || i < p.count) {
      grad[k] = grad_out[i];
      value[k] = Formula != mps_ops::scaled_formula ? x[i] : T(0);
    }
  }
  channel_walk w = channel_of(first, p);
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    if (Whole || first + k * step < p.count) {
      const float4 c = reinterpret_cast<constant float4*>(coefficients)[w.channel];
      const float g = float(grad[k]);
      const float x_k = float(value[k]);
      result[k] = static_cast<T>(Formula == mps_ops::centred_formula    ? (g - c.z - (x_k - c.x) * c.y) * c.w
                                 : Formula == mps_ops::products_formula ? g * c.w - x_k * c.y
                                 : Formula == mps_ops::grouped_formula  ? g * c.w - (x_k - c.x) * c.y - c.z
                                                                        : g * c.w);
    }
    w = next(w, p);
  }
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * step;
    if (Whole || i < p.count) {
      grad_input[i] = result[k];
    }
  }
}

// The formula as a constant of each instantiation: read per element, it
// branched around each element's loads and arithmetic.
template <bool Whole, typename T>
inline void batch_norm_backward_apply_formula(device T* grad_input, constant T* grad_out, constant T* x,
                                              constant float* coefficients,
                                              thread const mps_ops::batch_norm_apply_params& p, uint first) {
  if (p.formula == mps_ops::centred_formula) {
    batch_norm_backward_apply_tile<Whole, mps_ops::centred_formula>(grad_input, grad_out, x, coefficients, p, first);
  } else if (p.formula == mps_ops::products_formula) {
    batch_norm_backward_apply_tile<Whole, mps_ops::products_formula>(grad_input, grad_out, x, coefficients, p, first);
  } else if (p.formula == mps_ops::grouped_formula) {
    batch_norm_backward_apply_tile<Whole, mps_ops::grouped_formula>(grad_input, grad_out, x, coefficients, p, first);
  } else {
    batch_norm_backward_apply_tile<Whole, mps_ops::scaled_formula>(grad_input, grad_out, x, coefficients, p, first);
  }
}

template <typename T>
kernel void batch_norm_backward_apply(
    device T* grad_input [[buffer(0)]],
    constant T* grad_out [[buffer(1)]],
    constant T* x [[buffer(2)]],
    constant float* coefficients [[buffer(3)]],
    constant mps_ops::batch_norm_apply_params& params [[buffer(4)]],
    uint thread_index [[thread_position_in_grid]]) {
  constexpr uint K = mps_ops::elements_per_thread(sizeof(T));
  const uint first = mps_ops::per_element_first<K>(thread_index);
  const mps_ops::batch_norm_apply_params p = params;
  if (mps_ops::per_element_whole_tile<K>(first, p.count)) {
    batch_norm_backward_apply_formula<true>(grad_input, grad_out, x, coefficients, p, first);
  } else {
    batch_norm_backward_apply_formula<false>(grad_input, grad_out, x, coefficients, p, first);
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, batch_norm_channels, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, batch_norm_apply, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, batch_norm_backward_channels, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, batch_norm_backward_apply, dense)

// The reduction's two passes per (parameter, input) dtype pair: a half or
// bfloat input's parameters are its own dtype or float (the CPU's mixed
// rule). The merge is reduction.h's, over the same reducer.
#define REGISTER_BATCH_NORM_BACKWARD_SUMS(PARAM, IN)                                                     \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(batch_norm_backward_sums, reduce, PARAM, IN),                    \
                      batch_norm_backward_sums, PARAM, IN)                                               \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(batch_norm_backward_sums, merge, PARAM, IN),                     \
                      mps_ops::reduce_two_merge, backward_sums<PARAM>, float, IN)
REGISTER_BATCH_NORM_BACKWARD_SUMS(half, half)
REGISTER_BATCH_NORM_BACKWARD_SUMS(bfloat, bfloat)
REGISTER_BATCH_NORM_BACKWARD_SUMS(float, float)
REGISTER_BATCH_NORM_BACKWARD_SUMS(float, half)
REGISTER_BATCH_NORM_BACKWARD_SUMS(float, bfloat)
