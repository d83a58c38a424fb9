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

// One thread per grad_input element (x, y) of a plane: the sum over the
// output rows oh, then columns ow, covering it of wy * wx * grad, in the
// CPU's order. The covering columns' weights do not depend on oh: a thread
// holds up to aa_held_columns of them (column and weight) and reads them
// from the tables once, not once per output row (H200: the bilinear
// backward of a 2x downsample took 0.55x torch's CUDA kernel reading them
// per row, with 64-bit divisions for the element's place, in which the
// bicubic one took 0.84x; 1.33x since).
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
  const long x = long(mps_ops::remainder_of(index, line, by_width));
  const mps_ops::fast_divisor by_channels{p.by_channels.divisor, p.by_channels.multiplier, p.by_channels.shift};
  const uint plane = mps_ops::quotient(line, by_height);
  const long y = long(mps_ops::remainder_of(line, plane, by_height));
  const uint sample = mps_ops::quotient(plane, by_channels);
  const uint channel = mps_ops::remainder_of(plane, sample, by_channels);
  constant T* grad_plane =
      grad_output + long(sample) * p.grad_output_strides[0] + long(channel) * p.grad_output_strides[1];
  const long oh_count = p.out_height;
  const long ow_count = p.out_width;
  const long column_stride = p.grad_output_strides[3];
  // The covering columns lie in [ow_first, ow_last]. Where they number at
  // most aa_held_columns, their weights go to registers (constant indices:
  // the loops unrolled) with a mask of those that cover x.
  const long ow_first = columns[2 * ow_count + x];
  const long ow_last = columns[2 * ow_count + p.width + x];
  const bool all_held = ow_last - ow_first < long(mps_ops::aa_held_columns);
  float held_weight[mps_ops::aa_held_columns];
  uint covered = 0;
  _Pragma("clang loop unroll(full)")
  for (int k = 0; k < mps_ops::aa_held_columns; ++k) {
    const long ow = ow_first + k;
    held_weight[k] = 0.0f;
    if (all_held && ow <= ow_last) {
      const long column_start = columns[ow];
      if (x >= column_start && x < column_start + columns[ow_count + ow]) {
        covered |= 1u << k;
        held_weight[k] = column_weights[ow * p.taps_w + (x - column_start)];
      }
    }
  }
  float sum = 0.0f;
  for (long oh = rows[2 * oh_count + y]; oh <= rows[2 * oh_count + p.height + y]; ++oh) {
    const long row_start = rows[oh];
    if (y < row_start || y >= row_start + rows[oh_count + oh]) {
      continue;
    }
    const float wy = row_weights[oh * p.taps_h + (y - row_start)];
    constant T* grad_row = grad_plane + oh * p.grad_output_strides[2];
    if (all_held) {
      constant T* first_column = grad_row + ow_first * column_stride;
      _Pragma("clang loop unroll(full)")
      for (int k = 0; k < mps_ops::aa_held_columns; ++k) {
        if ((covered >> k) & 1u) {
          sum += (held_weight[k] * wy) * float(first_column[k * column_stride]);
        }
      }
      continue;
    }
    for (long ow = ow_first; ow <= ow_last; ++ow) {
      const long column_start = columns[ow];
      if (x < column_start || x >= column_start + columns[ow_count + ow]) {
        continue;
      }
      const float wx = column_weights[ow * p.taps_w + (x - column_start)];
      sum += (wx * wy) * float(grad_row[ow * column_stride]);
    }
  }
  grad_input[index] = static_cast<T>(sum);
}

MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(upsample_lanczos, dense, float, float), upsample_lanczos_pass, float)
MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(upsample_lanczos, dense, uchar, uchar), upsample_lanczos_pass, uchar)
MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(upsample_aa_backward, dense, float, float), upsample_aa_backward, float)
