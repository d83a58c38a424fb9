// Fake quantization with its gradient mask (fake_quantize_per_tensor_affine_cachemask,
// its tensor-qparams form, fake_quantize_per_channel_affine_cachemask): each
// element rounded to the integer grid of its channel's scale and zero point,
// clamped to [quant_min, quant_max] and mapped back; the mask says where no
// clamping happened. Computed in float for every dtype, as the CPU does for
// half and bfloat16. The clamp is float too: NaN goes to quant_min and the
// infinities to the nearer bound, with a false mask, as the CPU's per-tensor
// op gives them (its per-channel op converts to int64 first, which x86 and
// Arm define differently for those).
#include <metal_stdlib>
#include <mps_ops/double_float.h>
#include <mps_ops/instantiate.h>
#include <mps_ops/per_element.h>
#include "fake_quantize_params.h"
using namespace metal;

// The scale and zero point of element i's channel.
struct fake_quantize_qparams {
  float scale;
  float zero_point;
};

inline fake_quantize_qparams qparams_of(uint i, constant float* scales, constant int* zero_points,
                                        thread const mps_ops::fake_quantize_params& p) {
  if (p.qparams_source == mps_ops::fake_quantize_qparams_in_params) {
    return {p.scale, p.zero_point};
  }
  const uint c = p.channels == 1 ? 0u : i / p.channel_stride % p.channels;
  const int zero_point = zero_points[c];
  return {scales[c], p.zero_point_is_float != 0 ? as_type<float>(zero_point) : float(zero_point)};
}

// The CPU's order of operations: the reciprocal of the scale, then the
// product, rounded half to even (rint) before or after the zero point joins.
inline float quantized_value(float x, fake_quantize_qparams q, int rounding) {
  const float inv_scale = 1.0f / q.scale;
  return rounding == mps_ops::fake_quantize_add_then_round ? rint(fma(x, inv_scale, q.zero_point))
                                                           : rint(x * inv_scale) + q.zero_point;
}

// A thread's up to K elements (elements_per_thread; per_element.h's tiles),
// all of x loaded before any is computed. Whole: the tile lies below count,
// so no element is checked (straight-line code the compiler interleaves);
// WithMask: the mask is written too (fake_quantize_values leaves it out).
template <bool Whole, bool WithMask, typename T>
inline void fake_quantize_tile(device T* out, device bool* mask, constant T* x, constant float* scales,
                               constant int* zero_points, bool pass_through,
                               thread const mps_ops::fake_quantize_params& p, uint first) {
  constexpr uint K = mps_ops::elements_per_thread(sizeof(T));
  constexpr uint step = mps_ops::elementwise_tile;
  T value[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * step;
    if (Whole || i < p.count) {
      value[k] = x[i];
    }
  }
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * step;
    if (!Whole && i >= p.count) {
      continue;
    }
    if (pass_through) {
      out[i] = value[k];
      if (WithMask) {
        mask[i] = true;
      }
      continue;
    }
    const fake_quantize_qparams q = qparams_of(i, scales, zero_points, p);
    const float level = quantized_value(float(value[k]), q, p.rounding);
    if (WithMask) {
      mask[i] = p.quant_min <= level && level <= p.quant_max;
    }
    out[i] = static_cast<T>((fmin(fmax(level, p.quant_min), p.quant_max) - q.zero_point) * q.scale);
  }
}

template <bool WithMask, typename T>
inline void fake_quantize_elements(device T* out, device bool* mask, constant T* x, constant float* scales,
                                   constant int* zero_points, constant int* enabled,
                                   constant mps_ops::fake_quantize_params& params, uint thread_index) {
  constexpr uint K = mps_ops::elements_per_thread(sizeof(T));
  const uint first = mps_ops::per_element_first<K>(thread_index);
  const mps_ops::fake_quantize_params p = params;  // read once: the stores below could alias it
  // The tensor-qparams form's switch, read on the device (the CPU reads it
  // on the host): off, x passes through and every gradient flows.
  const bool pass_through = p.read_enabled != 0 && enabled[0] == 0;
  if (mps_ops::per_element_whole_tile<K>(first, p.count)) {
    fake_quantize_tile<true, WithMask>(out, mask, x, scales, zero_points, pass_through, p, first);
  } else {
    fake_quantize_tile<false, WithMask>(out, mask, x, scales, zero_points, pass_through, p, first);
  }
}

template <typename T>
kernel void fake_quantize_cachemask(
    device T* out [[buffer(0)]],
    device bool* mask [[buffer(1)]],
    constant T* x [[buffer(2)]],
    constant float* scales [[buffer(3)]],
    constant int* zero_points [[buffer(4)]],
    constant int* enabled [[buffer(5)]],
    constant mps_ops::fake_quantize_params& params [[buffer(6)]],
    uint thread_index [[thread_position_in_grid]]) {
  fake_quantize_elements<true>(out, mask, x, scales, zero_points, enabled, params, thread_index);
}

// The values alone, for a caller that discards the mask (the learnable
// per-tensor op): a fifth less memory traffic for half and bfloat16.
template <typename T>
kernel void fake_quantize_values(
    device T* out [[buffer(0)]],
    constant T* x [[buffer(1)]],
    constant float* scales [[buffer(2)]],
    constant int* zero_points [[buffer(3)]],
    constant int* enabled [[buffer(4)]],
    constant mps_ops::fake_quantize_params& params [[buffer(5)]],
    uint thread_index [[thread_position_in_grid]]) {
  fake_quantize_elements<false>(out, nullptr, x, scales, zero_points, enabled, params, thread_index);
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, fake_quantize_cachemask, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, fake_quantize_values, dense)

// The learnable fake quantizers' backward (_fake_quantize_learnable_per_tensor_affine_backward,
// the per-channel one: LearnableFakeQuantize's gradients), per element in
// float, the results float (the CPU converts bfloat16 inputs to float; ours
// reads them as they are, T, which the conversion leaves exact): dX where
// x is inside the grid, and the element's terms of d(scale) and d(zero point)
// (scaled by grad_factor), which the host sums. The CPU rounds the zero point
// plus x / scale in one fused multiply-add (its AVX2 and AVX512 builds
// contract it); the zero point is a float's bits in zero_points.
template <typename T>
kernel void fake_quantize_learnable_grad(
    device float* grad_x [[buffer(0)]],
    device float* grad_scale [[buffer(1)]],
    device float* grad_zero_point [[buffer(2)]],
    constant T* x [[buffer(3)]],
    constant T* grad [[buffer(4)]],
    constant float* scales [[buffer(5)]],
    constant int* zero_points [[buffer(6)]],
    constant mps_ops::fake_quantize_params& params [[buffer(7)]],
    uint thread_index [[thread_position_in_grid]]) {
  constexpr uint K = mps_ops::elements_per_thread(sizeof(T));
  const uint first = mps_ops::per_element_first<K>(thread_index), step = mps_ops::elementwise_tile;
  const mps_ops::fake_quantize_params p = params;  // read once: the stores below could alias it
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * step;
    if (i >= p.count) {
      continue;
    }
    const float value = float(x[i]), dy = float(grad[i]);
    const fake_quantize_qparams q = qparams_of(i, scales, zero_points, p);
    const float inv_scale = 1.0f / q.scale;
    const float level = rint(fma(value, inv_scale, q.zero_point));
    const bool inside = p.quant_min <= level && level <= p.quant_max;
    grad_x[i] = dy * (inside ? 1.0f : 0.0f);  // a product, as the CPU's: an infinite dy gives NaN outside
    if (inside) {
      const float fake = (level - q.zero_point) * q.scale;
      grad_scale[i] = ((dy * (fake - value)) * inv_scale) * p.grad_factor;
      grad_zero_point[i] = 0.0f;
    } else {
      // The bound it lies beyond; NaN takes quant_min's side, as the forward's clamp does.
      const float bound = level > p.quant_max ? p.quant_max : p.quant_min;
      grad_scale[i] = (dy * (bound - q.zero_point)) * p.grad_factor;
      grad_zero_point[i] = ((dy * -1.0f) * q.scale) * p.grad_factor;
    }
  }
}

MPS_OPS_INSTANTIATE_FOR_TYPE(fake_quantize_learnable_grad, dense, float)
MPS_OPS_INSTANTIATE_FOR_TYPE(fake_quantize_learnable_grad, dense, bfloat)

// ---------------------------------------------------------------------------
// The fused observer of _fused_moving_avg_obs_fq_helper (FusedMovingAvgObsFakeQuantize,
// the default QAT qconfig's fake quantizer), per channel: the CPU's moving
// average of the running extremes and FBGEMM's ChooseQuantizationParams, which
// the CPU runs in float and double. The double steps run in double-float
// here (Metal has no double); each step's rounding is the CPU's.

// x + c * (y - x) rounded as the CPU rounds it: the product first (its build
// contracts nothing there). fma(c, d, +0) is the rounded product, and no
// compiler fuses it with the sum, where c * d + x may become one fma.
inline float moving_average(float running, float current, float c) {
  if (isinf(running)) {
    return current;  // the first observation (the running extremes start infinite)
  }
  return running + fma(c, current - running, 0.0f);
}

// a / k as a double-float (a non-finite quotient alone).
inline mps_ops::double_float df_over(mps_ops::double_float a, float k) {
  const float quotient = a.hi / k;
  if (!isfinite(quotient) || quotient == 0.0f) {
    return {quotient, 0.0f};
  }
  return mps_ops::df_divide(a, k);
}

inline bool df_less(mps_ops::double_float a, mps_ops::double_float b) {
  return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}

inline mps_ops::double_float df_abs(mps_ops::double_float a) {
  return a.hi < 0.0f || (a.hi == 0.0f && a.lo < 0.0f) ? mps_ops::df_negate(a) : a;
}

// nearbyint(hi + lo): hi's nearest integer, moved by lo only where hi lies
// half-way (elsewhere |lo|, below half an ulp of hi, cannot cross a half).
inline float df_rint(mps_ops::double_float a) {
  const float nearest = rint(a.hi);
  const float off = a.hi - nearest;
  if (off == 0.5f && a.lo > 0.0f) {
    return nearest + 1.0f;
  }
  if (off == -0.5f && a.lo < 0.0f) {
    return nearest - 1.0f;
  }
  return nearest;
}

// FBGEMM's ChooseQuantizationParams (what torch's x86 and Arm builds run):
// the range widened to hold 0, scale = (max - min) / (qmax - qmin) in double
// rounded to float (0.1 where it is 0 or its reciprocal overflows; at least
// 6.1e-5, the range widened to match), the zero point from the end whose
// error is smaller (the middle of the range where preserving sparsity),
// clamped and rounded half to even.
inline void choose_qparams(float min, float max, int qmin, int qmax, bool preserve_sparsity, thread float& scale,
                           thread int& zero_point) {
  constexpr float smallest_scale = 6.1e-5f;
  if (min < 0.0f && max > 0.0f && preserve_sparsity) {
    const int symmetric_qmin = -((qmax - qmin) / 2 + 1);
    const int symmetric_qmax = (qmax - qmin) / 2;
    const float from_min = fabs(min / float(symmetric_qmin)), from_max = fabs(max / float(symmetric_qmax));
    const float max_scale = from_min < from_max ? from_max : from_min;  // std::max
    min = max_scale * float(symmetric_qmin);
    max = max_scale * float(symmetric_qmax);
  }
  min = 0.0f < min ? 0.0f : min;  // std::min(min, 0), a NaN kept
  max = max < 0.0f ? 0.0f : max;  // std::max(max, 0)
  const float range = float(qmax - qmin);
  scale = range == 0.0f ? (max - min) / range : df_over(mps_ops::two_sum(max, -min), range).hi;
  if (scale == 0.0f || isinf(1.0f / scale)) {
    scale = 0.1f;
  }
  if (scale < smallest_scale) {
    const float original = scale;
    scale = smallest_scale;
    if (min == 0.0f) {
      max = smallest_scale * range;
    } else if (max == 0.0f) {
      min = -smallest_scale * range;
    } else {
      const float amplifier = smallest_scale / original;
      min *= amplifier;
      max *= amplifier;
    }
  }
  const mps_ops::double_float min_steps = df_over({min, 0.0f}, scale), max_steps = df_over({max, 0.0f}, scale);
  const mps_ops::double_float from_min = mps_ops::df_add({float(qmin), 0.0f}, mps_ops::df_negate(min_steps));
  const mps_ops::double_float from_max = mps_ops::df_add({float(qmax), 0.0f}, mps_ops::df_negate(max_steps));
  const mps_ops::double_float error_min = mps_ops::df_add({fabs(float(qmin)), 0.0f}, df_abs(min_steps));
  const mps_ops::double_float error_max = mps_ops::df_add({fabs(float(qmax)), 0.0f}, df_abs(max_steps));
  mps_ops::double_float initial = df_less(error_min, error_max) ? from_min : from_max;
  if (min < 0.0f && max > 0.0f && preserve_sparsity) {
    initial = mps_ops::double_float{float(qmin + qmax) / 2.0f, 0.0f};  // a whole number or a half: exact in float
  }
  if (df_less(initial, {float(qmin), 0.0f}) || isnan(initial.hi)) {
    zero_point = qmin;
  } else if (df_less({float(qmax), 0.0f}, initial)) {
    zero_point = qmax;
  } else {
    zero_point = int(df_rint(initial));
  }
}

// T: float, the running statistics' type (the CPU's kernel reads float only).
template <typename T>
kernel void fake_quantize_observe(
    device T* running_min [[buffer(0)]],
    device T* running_max [[buffer(1)]],
    device float* scales [[buffer(2)]],
    device int* zero_points [[buffer(3)]],
    constant T* current_min [[buffer(4)]],
    constant T* current_max [[buffer(5)]],
    constant int* observer_on [[buffer(6)]],
    constant int* fake_quant_on [[buffer(7)]],
    constant mps_ops::fake_quantize_observe_params& params [[buffer(8)]],
    uint c [[thread_position_in_grid]]) {
  const mps_ops::fake_quantize_observe_params p = params;  // read once: the stores below could alias it
  if (c >= p.channels) {
    return;
  }
  float low = running_min[c], high = running_max[c];
  if (p.observe_input != 0 && observer_on[0] != 0) {
    low = moving_average(low, current_min[c], p.averaging_const);
    high = moving_average(high, current_max[c], p.averaging_const);
    running_min[c] = low;
    running_max[c] = high;
  }
  if (fake_quant_on[0] != 0) {
    float scale;
    int zero_point;
    choose_qparams(low, high, p.quant_min, p.quant_max, p.symmetric != 0, scale, zero_point);
    scales[c] = scale;
    zero_points[c] = zero_point;
  }
}

MPS_OPS_INSTANTIATE_FOR_TYPE(fake_quantize_observe, dense, float)
