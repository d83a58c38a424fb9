// The backward of 2-D max and average pooling as gathers: one thread per
// grad_input element sums the gradients of the grad_output cells whose
// windows cover it, in the order of the cells (so in the order the CPU's
// scatter adds them), with no atomics and the same result on every run.
// Half and bfloat16 sums are in float. Window o along an axis spans
// [o * stride - padding, o * stride - padding + (kernel - 1) * dilation + 1).
// Coordinates are 32-bit (the host sends pieces below 2**32 elements and
// checks that sizes plus padding fit); offsets are 64-bit.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/types.h>

#include "pool2d_backward_params.h"
using namespace metal;

namespace {

struct element_place {
  uint n, c, h, w;
};

// The element thread `index` writes: grad_input's elements in its memory
// order, so that neighbouring threads write neighbouring elements.
inline element_place place_of(uint index, constant mps_ops::pool2d_backward_geometry& g) {
  element_place e;
  if (g.channels_last != 0) {
    e.c = index % g.channels;
    index /= g.channels;
    e.w = index % g.width;
    index /= g.width;
    e.h = index % g.height;
    e.n = index / g.height;
  } else {
    e.w = index % g.width;
    index /= g.width;
    e.h = index % g.height;
    index /= g.height;
    e.c = index % g.channels;
    e.n = index / g.channels;
  }
  return e;
}

// The windows [first, last) along one axis whose span covers coordinate x.
inline void covering_windows(uint x, int window_size, int stride, int padding, int dilation, uint out_size,
                             thread uint& first, thread uint& last) {
  const uint reach = x + uint(padding);
  const uint span = uint(window_size - 1) * uint(dilation) + 1;
  first = reach < span ? 0 : (reach - span) / uint(stride) + 1;
  last = min(reach / uint(stride) + 1, out_size);
}

// Where window o along an axis starts (it may start in the padding).
inline long window_start(uint o, int stride, int padding) {
  return long(o) * stride - padding;
}

// The first coordinate of window o inside the input (past the padding, on
// the window's dilation grid): the forward's first candidate.
inline long first_inside(uint o, int stride, int padding, int dilation) {
  const long start = window_start(o, stride, padding);
  return start >= 0 ? start : start + (-start + dilation - 1) / dilation * dilation;
}

// Whether coordinate x is one of window o's elements inside an axis of
// size `size`.
inline bool in_window(long x, uint o, int window_size, int stride, int padding, int dilation, uint size) {
  const long first = first_inside(o, stride, padding, dilation);
  const long end = min(window_start(o, stride, padding) + long(window_size - 1) * dilation + 1, long(size));
  return x >= first && x < end && (x - first) % dilation == 0;
}

}  // namespace

// Max pooling: an element takes the gradient of each covering cell whose
// index (h * W + w within the plane, as the forward records it) names it.
// The thread of a cell's first element inside the input also checks that
// the cell's index names an element of its window (or is -1, which the CPU
// skips) and otherwise sets *invalid for the host to raise: a gather finds
// only indices inside their windows, where the CPU's scatter writes
// wherever an index points. A window with no element inside the input
// (only dilation makes one) passes no gradient.
template <typename T>
kernel void max_pool2d_backward(
    device T* grad_in [[buffer(0)]],
    device int* invalid [[buffer(1)]],
    constant T* grad_out [[buffer(2)]],
    constant long* indices [[buffer(3)]],
    constant mps_ops::pool2d_backward_geometry& g [[buffer(4)]],
    uint index [[thread_position_in_grid]]) {
  const element_place e = place_of(index, g);
  uint oh0, oh1, ow0, ow1;
  covering_windows(e.h, g.kernel_size[0], g.stride[0], g.padding[0], g.dilation[0], g.out_height, oh0, oh1);
  covering_windows(e.w, g.kernel_size[1], g.stride[1], g.padding[1], g.dilation[1], g.out_width, ow0, ow1);
  const long position = long(e.h) * g.width + e.w;
  const long out_base = long(e.n) * g.out_strides[0] + long(e.c) * g.out_strides[1];
  const long index_base = long(e.n) * g.index_strides[0] + long(e.c) * g.index_strides[1];
  mps_ops::opmath_t<T> sum = 0;
  for (uint oh = oh0; oh < oh1; ++oh) {
    const bool checks_row = long(e.h) == first_inside(oh, g.stride[0], g.padding[0], g.dilation[0]);
    for (uint ow = ow0; ow < ow1; ++ow) {
      const long cell_index = indices[index_base + long(oh) * g.index_strides[2] + long(ow) * g.index_strides[3]];
      if (cell_index == position) {
        sum += mps_ops::opmath_t<T>(grad_out[out_base + long(oh) * g.out_strides[2] + long(ow) * g.out_strides[3]]);
      }
      if (checks_row && long(e.w) == first_inside(ow, g.stride[1], g.padding[1], g.dilation[1]) &&
          cell_index != -1) {
        const bool inside = cell_index >= 0 && cell_index < long(g.height) * g.width &&
                            in_window(cell_index / g.width, oh, g.kernel_size[0], g.stride[0], g.padding[0],
                                      g.dilation[0], g.height) &&
                            in_window(cell_index % g.width, ow, g.kernel_size[1], g.stride[1], g.padding[1],
                                      g.dilation[1], g.width);
        if (!inside) {
          *invalid = 1;
        }
      }
    }
  }
  grad_in[long(e.n) * g.in_strides[0] + long(e.c) * g.in_strides[1] + long(e.h) * g.in_strides[2] +
          long(e.w) * g.in_strides[3]] = static_cast<T>(sum);
}

// Average pooling: each covering cell's gradient divided by its divisor, as
// the CPU computes it (the window clipped to the input plus padding, or to
// the input where padding is not counted, or divisor_override). Integer
// gradients divide with truncation, as the CPU's.
template <typename T>
kernel void avg_pool2d_backward(
    device T* grad_in [[buffer(0)]],
    constant T* grad_out [[buffer(1)]],
    constant mps_ops::pool2d_backward_geometry& g [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  using accumulator = mps_ops::opmath_t<T>;
  const element_place e = place_of(index, g);
  uint oh0, oh1, ow0, ow1;
  covering_windows(e.h, g.kernel_size[0], g.stride[0], g.padding[0], 1, g.out_height, oh0, oh1);
  covering_windows(e.w, g.kernel_size[1], g.stride[1], g.padding[1], 1, g.out_width, ow0, ow1);
  const long out_base = long(e.n) * g.out_strides[0] + long(e.c) * g.out_strides[1];
  accumulator sum = 0;
  for (uint oh = oh0; oh < oh1; ++oh) {
    const long h0 = window_start(oh, g.stride[0], g.padding[0]);
    const long rows = min(h0 + g.kernel_size[0], long(g.height) + g.padding[0]) - h0;
    const long rows_inside = min(h0 + g.kernel_size[0], long(g.height)) - max(h0, 0L);
    for (uint ow = ow0; ow < ow1; ++ow) {
      const long w0 = window_start(ow, g.stride[1], g.padding[1]);
      const long cols = min(w0 + g.kernel_size[1], long(g.width) + g.padding[1]) - w0;
      const long cols_inside = min(w0 + g.kernel_size[1], long(g.width)) - max(w0, 0L);
      const long divisor = g.divisor_override != 0 ? g.divisor_override
                           : g.count_include_pad != 0 ? rows * cols
                                                      : rows_inside * cols_inside;
      sum += accumulator(grad_out[out_base + long(oh) * g.out_strides[2] + long(ow) * g.out_strides[3]]) /
             accumulator(divisor);
    }
  }
  grad_in[long(e.n) * g.in_strides[0] + long(e.c) * g.in_strides[1] + long(e.h) * g.in_strides[2] +
          long(e.w) * g.in_strides[3]] = static_cast<T>(sum);
}

// One thread per element of grad_input: the host names say "dense".
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, max_pool2d_backward, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, avg_pool2d_backward, dense)
MPS_OPS_INSTANTIATE_FOR_TYPE(avg_pool2d_backward, dense, long)
