// _upsample_lanczos2d_aa and its backward (antialiased Lanczos-3 resize),
// and the backward of the antialiased bilinear and bicubic resizes (their
// forwards run on MPS; their backwards lack it in torch 2.9 to 2.13): the
// kernels take any filter's weights. The host computes each axis's windows
// and normalised weights exactly as the CPU does
// (csrc/operations/upsample_lanczos.mm) and binds them as tables:
// table[0, out) first input index of each output index, table[out, 2 out) its
// window length, then (backward) table[2 out, 2 out + in) and
// [2 out + in, 2 out + 2 in) the first and last output index whose window
// covers each input index. Forward is separable, one pass per resized axis,
// one thread per output element, summing its window in order from the first
// term (float in float; uint8 in int32 fixed point, rounded, then clamped),
// as the CPU does. Backward gathers per grad_input element over the output
// cells covering it in (oh, ow) order, the order the CPU's scatter adds them.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include "upsample_lanczos_params.h"
using namespace metal;

namespace {

template <typename T>
struct lanczos_weight {
  using type = float;
};
template <>
struct lanczos_weight<uchar> {
  using type = int;
};

inline float window_sum(constant float* in, long offset, long stride, constant float* weights, long count,
                        int precision) {
  if (count == 0) {
    return 0.0f;
  }
  float sum = in[offset] * weights[0];
  for (long j = 1; j < count; ++j) {
    sum += in[offset + j * stride] * weights[j];
  }
  return sum;
}

inline uchar window_sum(constant uchar* in, long offset, long stride, constant int* weights, long count,
                        int precision) {
  int sum = 1 << (precision - 1);
  for (long j = 0; j < count; ++j) {
    sum += int(in[offset + j * stride]) * weights[j];
  }
  return uchar(clamp(sum >> precision, 0, 255));
}

}  // namespace

template <typename T>
kernel void upsample_lanczos_pass(
    device T* out [[buffer(0)]],
    constant T* in [[buffer(1)]],
    constant long* table [[buffer(2)]],
    constant typename lanczos_weight<T>::type* weights [[buffer(3)]],
    constant mps_ops::lanczos_pass_params& params [[buffer(4)]],
    uint index [[thread_position_in_grid]]) {
  long position[4];
  long rest = long(index);
  for (int d = 3; d >= 0; --d) {
    position[d] = rest % params.sizes[d];
    rest /= params.sizes[d];
  }
  const int axis = params.axis;
  const long o = position[axis];
  long in_offset = 0;
  long out_offset = 0;
  for (int d = 0; d < 4; ++d) {
    in_offset += (d == axis ? table[o] : position[d]) * params.in_strides[d];
    out_offset += position[d] * params.out_strides[d];
  }
  const long count = table[params.sizes[axis] + o];
  out[out_offset] = window_sum(in, in_offset, params.in_strides[axis], weights + o * params.taps, count,
                               params.precision);
}

template <typename T>
kernel void upsample_aa_backward(
    device T* grad_input [[buffer(0)]],
    constant T* grad_output [[buffer(1)]],
    constant long* rows [[buffer(2)]],
    constant float* row_weights [[buffer(3)]],
    constant long* columns [[buffer(4)]],
    constant float* column_weights [[buffer(5)]],
    constant mps_ops::lanczos_backward_params& params [[buffer(6)]],
    uint index [[thread_position_in_grid]]) {
  const long x = long(index) % params.width;
  const long y = (long(index) / params.width) % params.height;
  const long plane = long(index) / (params.width * params.height);
  constant T* grad_plane = grad_output + (plane / params.channels) * params.grad_output_strides[0] +
                           (plane % params.channels) * params.grad_output_strides[1];
  const long oh_count = params.out_height;
  const long ow_count = params.out_width;
  float sum = 0.0f;
  for (long oh = rows[2 * oh_count + y]; oh <= rows[2 * oh_count + params.height + y]; ++oh) {
    const long row_start = rows[oh];
    if (y < row_start || y >= row_start + rows[oh_count + oh]) {
      continue;
    }
    const float wy = row_weights[oh * params.taps_h + (y - row_start)];
    for (long ow = columns[2 * ow_count + x]; ow <= columns[2 * ow_count + params.width + x]; ++ow) {
      const long column_start = columns[ow];
      if (x < column_start || x >= column_start + columns[ow_count + ow]) {
        continue;
      }
      const float wx = column_weights[ow * params.taps_w + (x - column_start)];
      sum += (wx * wy) * float(grad_plane[oh * params.grad_output_strides[2] + ow * params.grad_output_strides[3]]);
    }
  }
  grad_input[index] = static_cast<T>(sum);
}

MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(upsample_lanczos, dense, float, float), upsample_lanczos_pass, float)
MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(upsample_lanczos, dense, uchar, uchar), upsample_lanczos_pass, uchar)
MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(upsample_aa_backward, dense, float, float), upsample_aa_backward, float)
