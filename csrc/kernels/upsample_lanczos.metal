// _upsample_lanczos2d_aa and its backward (antialiased Lanczos-3 resize),
// and the backward of the antialiased bilinear and bicubic resizes (their
// forwards run on MPS; their backwards lack it in torch 2.9 to 2.13): the
// kernels take any filter's weights. The host computes each axis's windows
// and normalised weights exactly as the CPU does
// (csrc/operations/upsample_lanczos.mm) and binds them as tables. Forward:
// table[0, out) the first input index of each output index, table[out,
// 2 out) its window length; separable, one pass per resized axis, one thread
// per output element, summing its window in order from the first term (float
// in float; uint8 in int32 fixed point, rounded, then clamped), as the CPU
// does. Backward: the same windows seen from the input side (the output
// indices covering each input index and their weights for it); it gathers
// per grad_input element over the output cells covering it in (oh, ow)
// order, the order the CPU's scatter adds them.
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

// One thread per grad_input position (x, y) of up to aa_planes_per_thread
// consecutive planes: per plane the sum over the output rows oh, then
// columns ow, covering it of wy * wx * grad, in the CPU's order. The
// covering rows and columns are consecutive; the host's tables give, per
// input row y and column x, the first, their count and their weights for it
// in order, the same in every plane: a thread looks them up once for its
// planes, and a term costs two loads, two multiplies and an add. H200: the
// bilinear backward of a 2x downsample took 0.55x torch's CUDA kernel
// searching each covering window for the element's place with 64-bit
// divisions, 0.6x with 32-bit divisors and column weights held in registers
// (an unrolled, masked loop): instruction-bound on table walks an Apple GPU
// pays the same for; 1.31x with these tables and plane blocks (bicubic
// 2.5x).
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
  constant mps_ops::lanczos_backward_params& p = params;
  // The divisors' fields (a struct member copied from constant memory is a
  // copy between address spaces).
  const mps_ops::fast_divisor by_width{p.by_width.divisor, p.by_width.multiplier, p.by_width.shift};
  const mps_ops::fast_divisor by_height{p.by_height.divisor, p.by_height.multiplier, p.by_height.shift};
  const uint line = mps_ops::quotient(index, by_width);
  const uint x = mps_ops::remainder_of(index, line, by_width);
  const uint plane_block = mps_ops::quotient(line, by_height);
  const uint y = mps_ops::remainder_of(line, plane_block, by_height);
  const long column_stride = p.grad_output_strides[3];
  const long row_stride = p.grad_output_strides[2];
  const int ow_count = int(columns[p.width + x]);
  const int oh_count = int(rows[p.height + y]);
  const long first_cell = rows[y] * row_stride + columns[x] * column_stride;
  constant float* wx = column_weights + long(x) * p.columns_stride;
  constant float* wy = row_weights + long(y) * p.rows_stride;
  const mps_ops::fast_divisor by_channels{p.by_channels.divisor, p.by_channels.multiplier, p.by_channels.shift};
  const uint first_plane = plane_block * mps_ops::aa_planes_per_thread;
  // (min first: the sum wraps for a block starting within 4 of 2**32.)
  const uint end_plane = first_plane + min(uint(mps_ops::aa_planes_per_thread), p.planes - first_plane);
  const uint plane_elements = uint(p.height * p.width);
  const uint position = y * uint(p.width) + x;
  for (uint plane = first_plane; plane < end_plane; ++plane) {
    const uint sample = mps_ops::quotient(plane, by_channels);
    const uint channel = mps_ops::remainder_of(plane, sample, by_channels);
    constant T* row_cell = grad_output + long(sample) * p.grad_output_strides[0] +
                           long(channel) * p.grad_output_strides[1] + first_cell;
    float sum = 0.0f;
    for (int j = 0; j < oh_count; ++j, row_cell += row_stride) {
      const float row_weight = wy[j];
      constant T* cell = row_cell;
      // A few terms per row (2 to 4 for 2x downsampling): unrolling them
      // only raised the register count.
      _Pragma("clang loop unroll(disable)")
      for (int k = 0; k < ow_count; ++k, cell += column_stride) {
        sum += (wx[k] * row_weight) * float(*cell);
      }
    }
    grad_input[plane * plane_elements + position] = static_cast<T>(sum);
  }
}

MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(upsample_lanczos, dense, float, float), upsample_lanczos_pass, float)
MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(upsample_lanczos, dense, uchar, uchar), upsample_lanczos_pass, uchar)
MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(upsample_aa_backward, dense, float, float), upsample_aa_backward, float)
