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

// Up to K elements per thread (elements_per_thread; per_element.h's tiles),
// all of x loaded before any is computed.
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
  constexpr uint K = mps_ops::elements_per_thread(sizeof(T));
  const uint first = mps_ops::per_element_first<K>(thread_index), step = mps_ops::elementwise_tile;
  const mps_ops::fake_quantize_params p = params;  // read once: the stores below could alias it
  T value[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * step;
    if (i < p.count) {
      value[k] = x[i];
    }
  }
  // The tensor-qparams form's switch, read on the device (the CPU reads it
  // on the host): off, x passes through and every gradient flows.
  const bool pass_through = p.read_enabled != 0 && enabled[0] == 0;
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * step;
    if (i < p.count) {
      if (pass_through) {
        out[i] = value[k];
        mask[i] = true;
        continue;
      }
      const fake_quantize_qparams q = qparams_of(i, scales, zero_points, p);
      const float level = quantized_value(float(value[k]), q, p.rounding);
      mask[i] = p.quant_min <= level && level <= p.quant_max;
      out[i] = static_cast<T>((fmin(fmax(level, p.quant_min), p.quant_max) - q.zero_point) * q.scale);
    }
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, fake_quantize_cachemask, dense)
