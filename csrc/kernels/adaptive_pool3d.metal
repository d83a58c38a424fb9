// Adaptive 3-D average and max pooling with their backward passes. Output
// cell o of an axis of input size I and output size O covers input
// [floor(o * I / O), ceil((o + 1) * I / O)). Forward: one thread per output
// element. Backward: one thread per input element, gathering from the
// output cells that cover it (no atomics, the same sum order on every run).
// Max pooling keeps the first maximum of a cell, or its last NaN, and the
// index of it within the D*H*W plane, as the CPU does.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/shape_limits.h>
#include <mps_ops/types.h>

#include "adaptive_pool3d_params.h"
using namespace metal;

namespace {

inline long cell_start(long o, long in_size, long out_size) {
  return (o * in_size) / out_size;
}
inline long cell_end(long o, long in_size, long out_size) {
  return ((o + 1) * in_size + out_size - 1) / out_size;
}

// coords[0..4] of the row-major position `flat` over sizes[0..4].
inline void unflatten5(long flat, constant long* sizes, thread long* coords) {
  for (int d = 4; d >= 0; --d) {
    coords[d] = flat % sizes[d];
    flat /= sizes[d];
  }
}

inline long offset5(thread const long* coords, constant long* strides) {
  long offset = 0;
  for (int d = 0; d < 5; ++d) {
    offset += coords[d] * strides[d];
  }
  return offset;
}

// The cell bounds of the backward passes, 32-bit: every input coordinate
// and size fits 32 bits (the host allows no more than 2**32 - 1 input
// elements and 2**32 - 1 cells along an axis), and only a product of two of
// them can overflow, so the product is 64-bit and the division 32-bit where
// the product allows (a GPU divides 64-bit integers in software, tens of
// instructions). Narrow, where the host found every numerator below 2**32,
// divides by its fast_divisors instead (a multiply-high, an add and a shift
// where a 32-bit division is some twenty instructions, on an Apple GPU as on
// NVIDIA's), with no 64-bit division left in the kernel (its call kept
// registers spilled): adaptive_max_pool3d_backward, whose threads do little
// else, takes it.
inline uint div32(ulong num, uint den) {
  return num <= 0xffffffffUL ? uint(num) / den : uint(num / ulong(den));
}
// (`by` unused where !Narrow: the average pool's backward passes none.)
template <bool Narrow>
inline uint divide(ulong num, uint den, mps_ops::fast_divisor by) {
  return Narrow ? mps_ops::quotient(uint(num), by) : div32(num, den);
}
template <bool Narrow>
inline uint cell_start(uint o, uint in_size, uint out_size, mps_ops::fast_divisor by_out = {}) {
  return divide<Narrow>(ulong(o) * in_size, out_size, by_out);
}
template <bool Narrow>
inline uint cell_end(uint o, uint in_size, uint out_size, mps_ops::fast_divisor by_out = {}) {
  return divide<Narrow>(ulong(o + 1) * in_size + out_size - 1, out_size, by_out);
}
template <bool Narrow>
inline void covering(uint i0, uint i1, uint in_size, uint out_size, thread uint& first, thread uint& last,
                     mps_ops::fast_divisor by_in = {}) {
  first = divide<Narrow>(ulong(i0) * out_size, in_size, by_in);
  last = min(divide<Narrow>(ulong(i1) * out_size + in_size - 1, in_size, by_in), out_size);
}
// Offsets inside one (n, c) plane of grad_output and indices: 32-bit in the
// narrow kernel (the host found both planes' spans below 2**32), so a
// cell's address is three 32-bit multiply-adds and one widening add.
template <bool Narrow>
struct plane_offset {
  using type = long;
};
template <>
struct plane_offset<true> {
  using type = uint;
};
// A divisor from constant memory in registers (field by field: MSL copies
// no struct across address spaces).
inline mps_ops::fast_divisor held(constant mps_ops::fast_divisor& d) {
  return mps_ops::fast_divisor{d.divisor, d.multiplier, d.shift};
}
// The first output cell along an axis whose window starts at or after
// input i: cell o starts at floor(o * in / out) >= i exactly where
// o >= ceil(i * out / in).
template <bool Narrow>
inline uint first_cell_from(uint i, uint in_size, uint out_size, mps_ops::fast_divisor by_in) {
  return divide<Narrow>(ulong(i) * out_size + in_size - 1, in_size, by_in);
}

}  // namespace

template <typename T>
kernel void adaptive_avg_pool3d(
    device T* out [[buffer(0)]],
    constant T* in [[buffer(1)]],
    constant mps_ops::pool3d_geometry& g [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  long o[5];
  unflatten5(long(index), g.out_sizes, o);
  const long d0 = cell_start(o[2], g.in_sizes[2], g.out_sizes[2]), d1 = cell_end(o[2], g.in_sizes[2], g.out_sizes[2]);
  const long h0 = cell_start(o[3], g.in_sizes[3], g.out_sizes[3]), h1 = cell_end(o[3], g.in_sizes[3], g.out_sizes[3]);
  const long w0 = cell_start(o[4], g.in_sizes[4], g.out_sizes[4]), w1 = cell_end(o[4], g.in_sizes[4], g.out_sizes[4]);
  const long base = o[0] * g.in_strides[0] + o[1] * g.in_strides[1];
  mps_ops::opmath_t<T> sum = 0;
  for (long d = d0; d < d1; ++d) {
    for (long h = h0; h < h1; ++h) {
      for (long w = w0; w < w1; ++w) {
        sum += in[base + d * g.in_strides[2] + h * g.in_strides[3] + w * g.in_strides[4]];
      }
    }
  }
  out[offset5(o, g.out_strides)] = static_cast<T>(sum / mps_ops::opmath_t<T>((d1 - d0) * (h1 - h0) * (w1 - w0)));
}

// Coordinates 32-bit (the 32-bit cell bounds above): one thread per input
// element, below 2**32 of them.
template <typename T>
kernel void adaptive_avg_pool3d_backward(
    device T* grad_in [[buffer(0)]],
    constant T* grad_out [[buffer(1)]],
    constant mps_ops::pool3d_geometry& g [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  const uint C = uint(g.in_sizes[1]), D = uint(g.in_sizes[2]), H = uint(g.in_sizes[3]), W = uint(g.in_sizes[4]);
  const uint OD = uint(g.out_sizes[2]), OH = uint(g.out_sizes[3]), OW = uint(g.out_sizes[4]);
  uint rest = index;
  const uint w = rest % W;
  rest /= W;
  const uint h = rest % H;
  rest /= H;
  const uint d = rest % D;
  rest /= D;
  const uint c = rest % C, n = rest / C;
  uint od0, od1, oh0, oh1, ow0, ow1;
  covering<false>(d, d + 1, D, OD, od0, od1);
  covering<false>(h, h + 1, H, OH, oh0, oh1);
  covering<false>(w, w + 1, W, OW, ow0, ow1);
  const long base = long(n) * g.out_strides[0] + long(c) * g.out_strides[1];
  mps_ops::opmath_t<T> sum = 0;
  for (uint od = od0; od < od1; ++od) {
    const uint d0 = cell_start<false>(od, D, OD), d1 = cell_end<false>(od, D, OD);
    if (d < d0 || d >= d1) continue;
    for (uint oh = oh0; oh < oh1; ++oh) {
      const uint h0 = cell_start<false>(oh, H, OH), h1 = cell_end<false>(oh, H, OH);
      if (h < h0 || h >= h1) continue;
      for (uint ow = ow0; ow < ow1; ++ow) {
        const uint w0 = cell_start<false>(ow, W, OW), w1 = cell_end<false>(ow, W, OW);
        if (w < w0 || w >= w1) continue;
        const mps_ops::opmath_t<T> cell = mps_ops::opmath_t<T>(long(d1 - d0) * long(h1 - h0) * long(w1 - w0));
        sum += mps_ops::opmath_t<T>(grad_out[base + long(od) * g.out_strides[2] + long(oh) * g.out_strides[3] +
                                             long(ow) * g.out_strides[4]]) /
               cell;
      }
    }
  }
  grad_in[long(n) * g.in_strides[0] + long(c) * g.in_strides[1] + long(d) * g.in_strides[2] +
          long(h) * g.in_strides[3] + long(w) * g.in_strides[4]] = static_cast<T>(sum);
}

template <typename T>
kernel void adaptive_max_pool3d(
    device T* out [[buffer(0)]],
    device long* indices [[buffer(1)]],
    constant T* in [[buffer(2)]],
    constant mps_ops::pool3d_geometry& g [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  long o[5];
  unflatten5(long(index), g.out_sizes, o);
  const long d0 = cell_start(o[2], g.in_sizes[2], g.out_sizes[2]), d1 = cell_end(o[2], g.in_sizes[2], g.out_sizes[2]);
  const long h0 = cell_start(o[3], g.in_sizes[3], g.out_sizes[3]), h1 = cell_end(o[3], g.in_sizes[3], g.out_sizes[3]);
  const long w0 = cell_start(o[4], g.in_sizes[4], g.out_sizes[4]), w1 = cell_end(o[4], g.in_sizes[4], g.out_sizes[4]);
  const long base = o[0] * g.in_strides[0] + o[1] * g.in_strides[1];
  const long plane_h = g.in_sizes[3], plane_w = g.in_sizes[4];
  mps_ops::opmath_t<T> best = -numeric_limits<float>::infinity();
  long best_index = (d0 * plane_h + h0) * plane_w + w0;
  for (long d = d0; d < d1; ++d) {
    for (long h = h0; h < h1; ++h) {
      for (long w = w0; w < w1; ++w) {
        const mps_ops::opmath_t<T> value = in[base + d * g.in_strides[2] + h * g.in_strides[3] + w * g.in_strides[4]];
        if (value > best || isnan(value)) {
          best = value;
          best_index = (d * plane_h + h) * plane_w + w;
        }
      }
    }
  }
  out[offset5(o, g.out_strides)] = static_cast<T>(best);
  indices[offset5(o, g.index_strides)] = best_index;
}

// Max-pool backward: each thread takes a run of up to K neighbouring input
// elements along W (K = elements_per_thread), so it reads each covering
// cell's index once for the whole run instead of once per element, compares
// it with the run's place in the plane, and gathers the cell's gradient
// into that element's sum: the sums take the cells in the same order as
// the CPU, deterministic, no atomics. The covering cells go B at a time:
// their indices load together, then the gradients of those landing in the
// run, so a thread waits on two loads per batch where the cell-by-cell loop
// waited on two per cell (each load's address hangs on the one before: the
// float kernel ran at 0.55x torch's CUDA scatter on an H200; an Apple GPU
// hides latency with threads in flight just the same). Coordinates are
// 32-bit, divided by the host's fast_divisors (Narrow: the cell bounds too;
// the thread index and an index's place in the plane are below 2**32 in
// either kernel): ncu counted some 1000 instructions per thread with 32-bit
// divisions, for 4 elements.
// The thread holding a cell's window corner (its first d, h and w) also
// checks the cell's index lies in the window and, if not, sets *invalid for
// the host to raise (an index elsewhere gathers nowhere).
template <typename T, bool Narrow>
kernel void adaptive_max_pool3d_backward(
    device T* grad_in [[buffer(0)]],
    device int* invalid [[buffer(1)]],
    constant T* grad_out [[buffer(2)]],
    constant long* indices [[buffer(3)]],
    constant mps_ops::pool3d_geometry& g [[buffer(4)]],
    uint index [[thread_position_in_grid]]) {
  constexpr uint K = mps_ops::elements_per_thread(sizeof(T));
  constexpr uint B = 2;
  const uint C = uint(g.in_sizes[1]), D = uint(g.in_sizes[2]), H = uint(g.in_sizes[3]), W = uint(g.in_sizes[4]);
  const uint OD = uint(g.out_sizes[2]), OH = uint(g.out_sizes[3]), OW = uint(g.out_sizes[4]);
  // The thread's run along W and its row (n, c, d, h), by fast division.
  uint row = mps_ops::quotient(index, g.by_runs);
  const uint w0 = (index - row * g.by_runs.divisor) * K;
  const uint count = min(K, W - w0);
  uint rest = mps_ops::quotient(row, g.by_in[1]);
  const uint h = row - rest * H;
  row = mps_ops::quotient(rest, g.by_in[0]);
  const uint d = rest - row * D;
  const uint n = mps_ops::quotient(row, g.by_channels);
  const uint c = row - n * C;
  uint od0, od1, oh0, oh1, ow0, ow1;
  covering<Narrow>(d, d + 1, D, OD, od0, od1, g.by_in[0]);
  covering<Narrow>(h, h + 1, H, OH, oh0, oh1, g.by_in[1]);
  covering<Narrow>(w0, w0 + count, W, OW, ow0, ow1, g.by_in[2]);
  // Covering cells at or past these start their windows in this run: the
  // cells whose corner this thread holds.
  const uint corner_od = first_cell_from<Narrow>(d, D, OD, g.by_in[0]),
             corner_oh = first_cell_from<Narrow>(h, H, OH, g.by_in[1]),
             corner_ow = first_cell_from<Narrow>(w0, W, OW, g.by_in[2]);
  const long run_start = long((d * H + h) * W + w0);
  using P = typename plane_offset<Narrow>::type;
  constant T* grad_plane = grad_out + (long(n) * g.out_strides[0] + long(c) * g.out_strides[1]);
  constant long* index_plane = indices + (long(n) * g.index_strides[0] + long(c) * g.index_strides[1]);
  // Read once: on a target where the flag's store may alias the geometry
  // (CUDA's generic pointers), every cell reloaded them.
  const P out_d = P(g.out_strides[2]), out_h = P(g.out_strides[3]), out_w = P(g.out_strides[4]);
  const P index_d = P(g.index_strides[2]), index_h = P(g.index_strides[3]), index_w = P(g.index_strides[4]);
  mps_ops::opmath_t<T> sum[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    sum[k] = 0;
  }
  const uint cells = (od1 - od0) * (oh1 - oh0) * (ow1 - ow0);
  uint od = od0, oh = oh0, ow = ow0;  // the batch's first cell, in the CPU's order
  for (uint done = 0; done < cells; done += B) {
    uint cell_d[B], cell_h[B], cell_w[B];
    long cell_index[B];
    _Pragma("clang loop unroll(full)")
    for (uint j = 0; j < B; ++j) {
      cell_d[j] = od;
      cell_h[j] = oh;
      cell_w[j] = ow;
      cell_index[j] = done + j < cells ? index_plane[P(od) * index_d + P(oh) * index_h + P(ow) * index_w] : -1;
      if (++ow == ow1) {
        ow = ow0;
        if (++oh == oh1) {
          oh = oh0;
          ++od;
        }
      }
    }
    // Where each cell's index lands in the run (K where it lands outside).
    uint place[B];
    mps_ops::opmath_t<T> grad[B];
    _Pragma("clang loop unroll(full)")
    for (uint j = 0; j < B; ++j) {
      const ulong from_start = ulong(cell_index[j] - run_start);
      place[j] = from_start < ulong(count) ? uint(from_start) : K;
      grad[j] = place[j] < K ? mps_ops::opmath_t<T>(grad_plane[P(cell_d[j]) * out_d + P(cell_h[j]) * out_h +
                                                               P(cell_w[j]) * out_w])
                             : 0;
    }
    _Pragma("clang loop unroll(full)")
    for (uint j = 0; j < B; ++j) {
      _Pragma("clang loop unroll(full)")
      for (uint k = 0; k < K; ++k) {  // unrolled: the sums stay in registers
        if (k == place[j]) {
          sum[k] += grad[j];
        }
      }
    }
  }
  // The cells whose window's corner (first d, h and w) this thread holds
  // each check that their index lies in their window, after the gathers
  // and apart from them: inside the gather loop the check's divisions and
  // their divisors' loads ran for nearly every cell, as some thread of each
  // SIMD group held a corner. (Cells at or past corner_* among the covering
  // ones start in this thread's run.)
  const long plane = long(D) * H * W;
  const mps_ops::fast_divisor by_h = held(g.by_in[1]), by_w = held(g.by_in[2]);
  const mps_ops::fast_divisor by_od = held(g.by_out[0]), by_oh = held(g.by_out[1]), by_ow = held(g.by_out[2]);
  for (uint cd = max(od0, corner_od); cd < od1; ++cd) {
    for (uint ch = max(oh0, corner_oh); ch < oh1; ++ch) {
      for (uint cw = max(ow0, corner_ow); cw < ow1; ++cw) {
        const long cell_index = index_plane[P(cd) * index_d + P(ch) * index_h + P(cw) * index_w];
        bool inside = cell_index >= 0 && cell_index < plane;
        if (inside) {
          const uint at = uint(cell_index);
          const uint in_row = mps_ops::quotient(at, by_w), id = mps_ops::quotient(in_row, by_h);
          const uint iw = at - in_row * W, ih = in_row - id * H;
          inside = id >= d && id < cell_end<Narrow>(cd, D, OD, by_od) && ih >= h &&
                   ih < cell_end<Narrow>(ch, H, OH, by_oh) && iw >= cell_start<Narrow>(cw, W, OW, by_ow) &&
                   iw < cell_end<Narrow>(cw, W, OW, by_ow);
        }
        if (!inside) {
          *invalid = 1;
        }
      }
    }
  }
  const long in_base = long(n) * g.in_strides[0] + long(c) * g.in_strides[1] + long(d) * g.in_strides[2] +
                       long(h) * g.in_strides[3];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {  // up to K, so that sum[k] stays in a register
    if (k < count) {
      grad_in[in_base + long(w0 + k) * g.in_strides[4]] = static_cast<T>(sum[k]);
    }
  }
}

// One thread per element of the grid's tensor: the host names say "dense".
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, adaptive_avg_pool3d, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, adaptive_avg_pool3d_backward, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, adaptive_max_pool3d, dense)
// The backward's Narrow kernel under the op's name, the other as `_wide`.
#define INSTANTIATE_MAX_POOL3D_BACKWARD(OP, NARROW, T) \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, dense, T, T), adaptive_max_pool3d_backward, T, NARROW)
MPS_OPS_FOR_FLOATING(INSTANTIATE_MAX_POOL3D_BACKWARD, adaptive_max_pool3d_backward, true)
MPS_OPS_FOR_FLOATING(INSTANTIATE_MAX_POOL3D_BACKWARD, adaptive_max_pool3d_backward_wide, false)
