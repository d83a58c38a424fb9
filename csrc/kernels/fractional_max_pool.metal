// fractional_max_pool2d/3d and their backward (2-D: depth 1). Each (batch,
// channel) plane has samples u in [0, 1) ((width, height) for 2-D, (time,
// height, width) for 3-D, as the CPU orders them) that place its windows:
// along an axis of input size I, output size O and window P, window o starts
// at int((o + u) * a) - int(u * a), a = (I - P) / (O - 1), and the last at
// I - P, computed in the input's type as the CPU does (so half inputs round
// where the CPU's do). A window keeps its first maximum or its last NaN, and
// that element's index in the (t, h, w) plane. Forward: one thread per output
// element. Backward: one thread per input element, gathering the gradient
// of every window whose index names it (no atomics).
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include "fractional_max_pool_params.h"
using namespace metal;

namespace {

// 32-bit: the host keeps every size below 2**31. alpha: the axis's
// (I - P) / (O - 1) in T, from the host (a division per output otherwise).
template <typename T>
inline int window_start(T sample, int o, int in_size, int out_size, int pool, float alpha_in_t) {
  if (o == out_size - 1) {
    return in_size - pool;
  }
  const T alpha = T(alpha_in_t);
  const int start = int(float(T(T(float(o)) + sample) * alpha)) - int(float(sample * alpha));
  // In range for any sample (truncation is monotone, alpha >= 0); the clamp
  // only guards the reads, whatever the conversions of NaN or inf give.
  return min(max(start, 0), in_size - pool);
}

}  // namespace

// One output per thread, as torch's CUDA kernel (several windows in flight
// per thread held 64 registers or spilled in ptxas, leaving the H100 at half
// occupancy). Coordinates and sizes 32-bit: the host allows no more than
// 2**32 - 1 outputs and planes below 2**31 elements, and a GPU divides
// 32-bit integers in a few instructions but 64-bit ones in software (64-bit
// sizes held for the windows' loops took 64 registers).
template <typename T>
kernel void fractional_max_pool(
    device T* out [[buffer(0)]],
    device long* indices [[buffer(1)]],
    constant T* in [[buffer(2)]],
    constant T* samples [[buffer(3)]],
    constant mps_ops::fractional_pool_params& p [[buffer(4)]],
    uint index [[thread_position_in_grid]]) {
  const uint out_w = uint(p.out_w), out_h = uint(p.out_h), out_t = uint(p.out_t), channels = uint(p.channels);
  const bool three_d = p.sample_count > 2;
  const int depth = int(p.depth), height = int(p.height), width = int(p.width);
  const int pool_t = int(p.pool_t), pool_h = int(p.pool_h), pool_w = int(p.pool_w);
  // The output's (plane, ot, oh, ow) by the host's divisors: four 32-bit
  // divisions, some sixty instructions, were a fifth of the kernel's.
  const uint row = mps_ops::quotient(index, p.by_out_w);
  const uint ow = index - row * out_w;
  const uint rows = mps_ops::quotient(row, p.by_out_h);
  const uint oh = row - rows * out_h;
  const uint plane = mps_ops::quotient(rows, p.by_out_t);
  const uint ot = rows - plane * out_t;
  const uint n = mps_ops::quotient(plane, p.by_channels), c = plane - n * channels;
  // The CPU's sample order: (width, height) for 2-D, (time, height, width) for 3-D.
  constant T* u = samples + long(plane) * p.sample_count;
  const int w0 = window_start(u[three_d ? 2 : 0], int(ow), width, int(out_w), pool_w, p.alpha[2]);
  const int h0 = window_start(u[1], int(oh), height, int(out_h), pool_h, p.alpha[1]);
  // 2-D: one window of depth 1 at 0 (the last-window rule), no sample read.
  const int t0 = three_d ? window_start(u[0], int(ot), depth, int(out_t), pool_t, p.alpha[0]) : 0;
  constant T* base = in + long(n) * p.in_strides[0] + long(c) * p.in_strides[1];
  // Offsets inside the plane in 32 bits, stepped, not multiplied: its span
  // is below 2**31 elements (the host's check). The loops are not unrolled:
  // clang unrolled each by 4 with remainders, more code than windows of 2
  // or 3 use. With 64-bit strides multiplied per element and the unrolled
  // loops the kernel held 40 registers (H200 ncu: 68% achieved occupancy
  // against torch's 90%, as many instructions); now 28-32.
  const uint step_t = uint(p.in_strides[2]), step_h = uint(p.in_strides[3]), step_w = uint(p.in_strides[4]);
  float best = -numeric_limits<float>::infinity();
  int best_index = (t0 * height + h0) * width + w0;  // in the (t, h, w) plane: below 2**31 (the host checks)
  uint plane_at = uint(t0) * step_t + uint(h0) * step_h + uint(w0) * step_w;
  _Pragma("clang loop unroll(disable)")
  for (int t = t0; t < t0 + pool_t; ++t, plane_at += step_t) {
    uint line_at = plane_at;
    _Pragma("clang loop unroll(disable)")
    for (int h = h0; h < h0 + pool_h; ++h, line_at += step_h) {
      uint at = line_at;
      _Pragma("clang loop unroll(disable)")
      for (int w = w0; w < w0 + pool_w; ++w, at += step_w) {
        const float value = base[at];
        if (value > best || isnan(value)) {
          best = value;
          best_index = (t * height + h) * width + w;
        }
      }
    }
  }
  out[index] = static_cast<T>(best);
  indices[index] = long(best_index);
}

// grad_in is contiguous (batch, channels, depth, height, width); grad_out and
// indices contiguous (batch, channels, out_t, out_h, out_w). Without the
// samples, which windows hold an element is unknown: every output of the
// plane is checked (O(outputs per plane) per element).
template <typename T>
kernel void fractional_max_pool_backward(
    device T* grad_in [[buffer(0)]],
    constant T* grad_out [[buffer(1)]],
    constant long* indices [[buffer(2)]],
    constant mps_ops::fractional_pool_params& p [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  const long plane_size = p.depth * p.height * p.width, outputs = p.out_t * p.out_h * p.out_w;
  const long me = long(index) % plane_size, plane = long(index) / plane_size;
  constant long* plane_indices = indices + plane * outputs;
  constant T* plane_grads = grad_out + plane * outputs;
  float sum = 0.0f;
  for (long o = 0; o < outputs; ++o) {
    if (plane_indices[o] == me) {
      sum += float(plane_grads[o]);
    }
  }
  grad_in[index] = static_cast<T>(sum);
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, fractional_max_pool, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, fractional_max_pool_backward, dense)
