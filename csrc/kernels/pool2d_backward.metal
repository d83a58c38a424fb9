// The backward of 2-D max and average pooling as gathers: one thread per
// grad_input element sums the gradients of the grad_output cells whose
// windows cover it, in the order of the cells (so in the order the CPU's
// scatter adds them), with no atomics and the same result on every run.
// Half and bfloat16 sums are in float. Window o along an axis spans
// [o * stride - padding, o * stride - padding + (kernel - 1) * dilation + 1).
// Coordinates and offsets are 32-bit (the host sends pieces whose offsets
// fit and checks that sizes plus padding do). The launch grid
// is one thread per element (average pooling) or per run of elements (max
// pooling, below).
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/shape_limits.h>
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
  using mps_ops::quotient;
  using mps_ops::remainder_of;
  element_place e;
  uint rest;
  if (g.channels_last != 0) {
    rest = quotient(index, g.by_channels);
    e.c = remainder_of(index, rest, g.by_channels);
    index = rest;
    rest = quotient(index, g.by_width);
    e.w = remainder_of(index, rest, g.by_width);
    e.n = quotient(rest, g.by_height);
    e.h = remainder_of(rest, e.n, g.by_height);
  } else {
    rest = quotient(index, g.by_width);
    e.w = remainder_of(index, rest, g.by_width);
    index = rest;
    rest = quotient(index, g.by_height);
    e.h = remainder_of(index, rest, g.by_height);
    e.n = quotient(rest, g.by_channels);
    e.c = remainder_of(rest, e.n, g.by_channels);
  }
  return e;
}

// The windows [first, last) along one axis whose span covers coordinate x
// (`by_stride` divides by the axis's stride).
inline void covering_windows(uint x, int window_size, mps_ops::fast_divisor by_stride, int padding, int dilation,
                             uint out_size, thread uint& first, thread uint& last) {
  const uint reach = x + uint(padding);
  const uint span = uint(window_size - 1) * uint(dilation) + 1;
  first = reach < span ? 0 : mps_ops::quotient(reach - span, by_stride) + 1;
  last = min(mps_ops::quotient(reach, by_stride) + 1, out_size);
}

// Window arithmetic in padded coordinates (x + padding), which are never
// negative and fit 32 bits (the host checks twice an axis's size plus its
// padding does): no 64-bit or signed arithmetic per cell.

// The first padded coordinate of window o inside the input (past the
// padding, on the window's dilation grid): the forward's first candidate.
inline uint first_inside(uint o, int stride, int padding, int dilation) {
  const uint start = o * uint(stride);
  return start >= uint(padding) ? start : start + (uint(padding) - start + uint(dilation) - 1) / uint(dilation) * uint(dilation);
}

// Whether coordinate x is one of window o's elements inside an axis of
// size `size`.
inline bool in_window(uint x, uint o, int window_size, int stride, int padding, int dilation, uint size) {
  const uint padded = x + uint(padding), first = first_inside(o, stride, padding, dilation);
  const uint end = min(o * uint(stride) + uint(window_size - 1) * uint(dilation) + 1, size + uint(padding));
  return padded >= first && padded < end && (dilation == 1 || (padded - first) % uint(dilation) == 0);
}

// Average pooling's window o along an axis of size `size`: its length
// clipped to the input plus padding, and to the input alone.
inline void window_lengths(uint o, int window_size, int stride, int padding, uint size, thread uint& with_padding,
                           thread uint& inside) {
  const uint start = o * uint(stride), end = start + uint(window_size);
  with_padding = min(end, size + 2 * uint(padding)) - start;
  inside = min(end, size + uint(padding)) - max(start, uint(padding));
}

}  // namespace

// Whether a max-pool cell's index is -1 (which the CPU skips) or names one
// of the cell's window elements inside the input. 32-bit once inside the
// plane (the host keeps a plane below 2**32 elements): a GPU divides 64-bit
// integers in software, and the checking threads hold up their SIMD group's
// others.
inline bool valid_index(long cell_index, uint oh, uint ow, constant mps_ops::pool2d_backward_geometry& g) {
  if (cell_index == -1) {
    return true;
  }
  if (cell_index < 0 || cell_index >= long(g.height) * g.width) {
    return false;
  }
  const uint plane = uint(cell_index), ih = mps_ops::quotient(plane, g.by_width);
  const uint iw = mps_ops::remainder_of(plane, ih, g.by_width);
  return in_window(ih, oh, g.kernel_size[0], g.stride[0], g.padding[0], g.dilation[0], g.height) &&
         in_window(iw, ow, g.kernel_size[1], g.stride[1], g.padding[1], g.dilation[1], g.width);
}

// Max pooling: an element takes the gradient of each covering cell whose
// index (h * W + w within the plane, as the forward records it) names it.
// Each thread takes a run of up to K neighbouring elements in grad_input's
// memory order (K = elements_per_thread): along W for a contiguous
// grad_input, where it reads each covering cell's index once for the run
// (not once per element); along C for a channels-last one, where the run's
// elements share their covering cells and the window arithmetic. The cells
// come in the same order for every element, as the CPU's scatter adds them.
// The thread of a cell's first element inside the input also checks that
// the cell's index is valid (valid_index) and otherwise sets *invalid for
// the host to raise (stored where found: a flag carried to the kernel's end
// measured slower on an H100, 0.75-0.87x torch against 0.86-0.99x): a gather finds only indices inside their windows,
// where the CPU's scatter writes wherever an index points. A window with no
// element inside the input (only dilation makes one) has no checking thread:
// the CPU's forward records an index past its row or plane there, and its
// backward writes there; ours adds the gradient only where that index names
// an element whose covering windows include the cell, else drops it.
template <typename T>
kernel void max_pool2d_backward(
    device T* grad_in [[buffer(0)]],
    device int* invalid [[buffer(1)]],
    constant T* grad_out [[buffer(2)]],
    constant long* indices [[buffer(3)]],
    constant mps_ops::pool2d_backward_geometry& g [[buffer(4)]],
    uint index [[thread_position_in_grid]]) {
  constexpr uint K = mps_ops::elements_per_thread(sizeof(T));
  const bool along_channels = g.channels_last != 0;
  const uint run_axis = along_channels ? g.channels : g.width;  // the runs lie along it
  uint rest = mps_ops::quotient(index, g.by_runs);
  const uint first = mps_ops::remainder_of(index, rest, g.by_runs) * K;
  const uint count = min(K, run_axis - first);
  // The run's first element (n, c, h, w); its others follow along W or C.
  uint n, c, h, w, next;
  if (along_channels) {
    c = first;
    next = mps_ops::quotient(rest, g.by_width);
    w = mps_ops::remainder_of(rest, next, g.by_width);
    n = mps_ops::quotient(next, g.by_height);
    h = mps_ops::remainder_of(next, n, g.by_height);
  } else {
    w = first;
    next = mps_ops::quotient(rest, g.by_height);
    h = mps_ops::remainder_of(rest, next, g.by_height);
    n = mps_ops::quotient(next, g.by_channels);
    c = mps_ops::remainder_of(next, n, g.by_channels);
  }
  const uint last_w = along_channels ? w : w + count - 1;
  uint oh0, oh1, ow0, ow1, unused;
  covering_windows(h, g.kernel_size[0], g.by_stride[0], g.padding[0], g.dilation[0], g.out_height, oh0, oh1);
  covering_windows(w, g.kernel_size[1], g.by_stride[1], g.padding[1], g.dilation[1], g.out_width, ow0, unused);
  covering_windows(last_w, g.kernel_size[1], g.by_stride[1], g.padding[1], g.dilation[1], g.out_width, unused, ow1);
  const long run_start = long(h) * g.width + w;  // the first element's place in the plane
  const uint out_base = n * g.out_strides[0] + c * g.out_strides[1];
  const uint index_base = n * g.index_strides[0] + c * g.index_strides[1];
  mps_ops::opmath_t<T> sum[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    sum[k] = 0;
  }
  for (uint oh = oh0; oh < oh1; ++oh) {
    const bool checks_row = h + uint(g.padding[0]) == first_inside(oh, g.stride[0], g.padding[0], g.dilation[0]);
    for (uint ow = ow0; ow < ow1; ++ow) {
      const uint out_at = out_base + oh * g.out_strides[2] + ow * g.out_strides[3];
      const uint index_at = index_base + oh * g.index_strides[2] + ow * g.index_strides[3];
      // Whether this thread checks the cell: its run holds the cell's first
      // element inside the input.
      bool checks = false;
      if (checks_row) {
        const uint first_w = first_inside(ow, g.stride[1], g.padding[1], g.dilation[1]) - uint(g.padding[1]);
        checks = first_w >= w && first_w <= last_w;
      }
      if (along_channels) {
        _Pragma("clang loop unroll(full)")
        for (uint k = 0; k < K; ++k) {  // unrolled: the sums stay in registers
          if (k < count) {
            const long cell_index = indices[index_at + k * g.index_strides[1]];
            // Loaded whatever the index: both loads in flight together
            // (under the test, it waited for the index's load).
            const mps_ops::opmath_t<T> grad = mps_ops::opmath_t<T>(grad_out[out_at + k * g.out_strides[1]]);
            if (cell_index == run_start) {
              sum[k] += grad;
            }
            if (checks && !valid_index(cell_index, oh, ow, g)) {
              *invalid = 1;
            }
          }
        }
      } else {
        const long cell_index = indices[index_at];
        const mps_ops::opmath_t<T> grad = mps_ops::opmath_t<T>(grad_out[out_at]);  // (as above)
        const long place = cell_index - run_start;
        _Pragma("clang loop unroll(full)")
        for (uint k = 0; k < K; ++k) {
          if (long(k) == place) {
            sum[k] += grad;
          }
        }
        if (checks && !valid_index(cell_index, oh, ow, g)) {
          *invalid = 1;
        }
      }
    }
  }
  const uint in_at = n * g.in_strides[0] + c * g.in_strides[1] + h * g.in_strides[2] + w * g.in_strides[3];
  const uint step = along_channels ? g.in_strides[1] : g.in_strides[3];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {  // up to K, so that sum[k] stays in a register
    if (k < count) {
      grad_in[in_at + k * step] = static_cast<T>(sum[k]);
    }
  }
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
  covering_windows(e.h, g.kernel_size[0], g.by_stride[0], g.padding[0], 1, g.out_height, oh0, oh1);
  covering_windows(e.w, g.kernel_size[1], g.by_stride[1], g.padding[1], 1, g.out_width, ow0, ow1);
  const uint out_base = e.n * g.out_strides[0] + e.c * g.out_strides[1];
  accumulator sum = 0;
  for (uint oh = oh0; oh < oh1; ++oh) {
    uint rows, rows_inside;
    window_lengths(oh, g.kernel_size[0], g.stride[0], g.padding[0], g.height, rows, rows_inside);
    for (uint ow = ow0; ow < ow1; ++ow) {
      uint cols, cols_inside;
      window_lengths(ow, g.kernel_size[1], g.stride[1], g.padding[1], g.width, cols, cols_inside);
      const long divisor = g.divisor_override != 0 ? g.divisor_override
                           : g.count_include_pad != 0 ? long(rows) * cols
                                                      : long(rows_inside) * cols_inside;
      sum += accumulator(grad_out[out_base + oh * g.out_strides[2] + ow * g.out_strides[3]]) / accumulator(divisor);
    }
  }
  grad_in[e.n * g.in_strides[0] + e.c * g.in_strides[1] + e.h * g.in_strides[2] + e.w * g.in_strides[3]] =
      static_cast<T>(sum);
}

// One thread per element of grad_input: the host names say "dense".
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, max_pool2d_backward, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, avg_pool2d_backward, dense)
MPS_OPS_INSTANTIATE_FOR_TYPE(avg_pool2d_backward, dense, long)
