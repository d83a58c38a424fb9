// fractional_max_pool2d and its backward. Each (batch, channel) plane has two
// samples u in [0, 1) (width first, then height) that place its windows:
// along an axis of input size I, output size O and window P, window o starts
// at int((o + u) * a) - int(u * a), a = (I - P) / (O - 1), and the last at
// I - P, computed in the input's type as the CPU does (so half inputs round
// where the CPU's do). A window keeps its first maximum or its last NaN, and
// that element's index in the plane. Forward: one thread per output
// element. Backward: one thread per input element, gathering the gradient
// of every window whose index names it (no atomics).
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
#include <mps_ops/params.h>
using namespace metal;

namespace {

template <typename T>
inline long window_start(T sample, long o, long in_size, long out_size, long pool) {
  if (o == out_size - 1) {
    return in_size - pool;
  }
  const T alpha = T(float(in_size - pool)) / T(float(out_size - 1));
  return long(int(float(T(T(float(o)) + sample) * alpha)) - int(float(sample * alpha)));
}

}  // namespace

template <typename T>
kernel void fractional_max_pool2d(
    device T* out [[buffer(0)]],
    device long* indices [[buffer(1)]],
    constant T* in [[buffer(2)]],
    constant T* samples [[buffer(3)]],
    constant mps_ops::fractional_pool2d_params& p [[buffer(4)]],
    uint index [[thread_position_in_grid]]) {
  const long ow = long(index) % p.out_w, oh = (long(index) / p.out_w) % p.out_h;
  const long plane = long(index) / (p.out_w * p.out_h);
  const long n = plane / p.channels, c = plane % p.channels;
  const long h0 = window_start(samples[plane * 2 + 1], oh, p.height, p.out_h, p.pool_h);
  const long w0 = window_start(samples[plane * 2], ow, p.width, p.out_w, p.pool_w);
  constant T* base = in + n * p.in_strides[0] + c * p.in_strides[1];
  float best = -numeric_limits<float>::infinity();
  long best_index = h0 * p.width + w0;
  for (long h = h0; h < h0 + p.pool_h; ++h) {
    for (long w = w0; w < w0 + p.pool_w; ++w) {
      const float value = base[h * p.in_strides[2] + w * p.in_strides[3]];
      if (value > best || isnan(value)) {
        best = value;
        best_index = h * p.width + w;
      }
    }
  }
  out[index] = static_cast<T>(best);
  indices[index] = best_index;
}

// grad_in is contiguous (batch, channels, height, width); grad_out and
// indices contiguous (batch, channels, out_h, out_w).
template <typename T>
kernel void fractional_max_pool2d_backward(
    device T* grad_in [[buffer(0)]],
    constant T* grad_out [[buffer(1)]],
    constant long* indices [[buffer(2)]],
    constant mps_ops::fractional_pool2d_params& p [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  const long w = long(index) % p.width, h = (long(index) / p.width) % p.height;
  const long plane = long(index) / (p.width * p.height);
  const long me = h * p.width + w;
  constant long* plane_indices = indices + plane * p.out_h * p.out_w;
  constant T* plane_grads = grad_out + plane * p.out_h * p.out_w;
  float sum = 0.0f;
  for (long o = 0; o < p.out_h * p.out_w; ++o) {
    if (plane_indices[o] == me) {
      sum += float(plane_grads[o]);
    }
  }
  grad_in[index] = static_cast<T>(sum);
}

#define REGISTER_FRACTIONAL_MAX_POOL2D(T)                                                      \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(fractional_max_pool2d, dense, T, T),                    \
                      fractional_max_pool2d, T)                                                 \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(fractional_max_pool2d_backward, dense, T, T),           \
                      fractional_max_pool2d_backward, T)
REGISTER_FRACTIONAL_MAX_POOL2D(half)
REGISTER_FRACTIONAL_MAX_POOL2D(bfloat)
REGISTER_FRACTIONAL_MAX_POOL2D(float)
