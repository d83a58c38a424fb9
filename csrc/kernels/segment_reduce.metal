// _segment_reduce and its backward. The data is (outer, length, inner) around
// the reduced axis; segment s of outer row o covers rows offsets[o][s] ..
// offsets[o][s+1]. Forward: output element (o, s, i) folds its segment from
// `initial` (or the reduction's identity), in float; mean divides by the
// segment's length, and an empty segment is `initial`, or NaN without one.
// max and min propagate NaN. Backward: each data row's segment is found once
// (segment_of_rows: a binary search per row, not per element), then each
// data element takes the CPU's formula:
//   sum: g   mean: g / length
//   max/min: g for each element equal to the result (NaN: each NaN), divided
//            by their number only where g > 0: the CPU kernel splits only
//            positive gradients among ties, and we match it
//   prod: g * result / x, or for x == 0 or NaN the product of the others (0 if
//         another is 0; the CPU's rule: result / x would be NaN there)
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/per_element.h>
#include "segment_reduce_params.h"
using namespace metal;

namespace {

enum { reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod };

inline float identity_of(int reduction) {
  switch (reduction) {
    case reduce_max: return -numeric_limits<float>::infinity();
    case reduce_min: return numeric_limits<float>::infinity();
    case reduce_prod: return 1.0f;
    default: return 0.0f;
  }
}

inline float fold(int reduction, float acc, float v) {
  switch (reduction) {
    case reduce_max: return (v > acc || v != v) ? v : acc;
    case reduce_min: return (v < acc || v != v) ? v : acc;
    case reduce_prod: return acc * v;
    default: return acc + v;
  }
}

// Element e of a (rows, inner) grid: row e / inner, column e % inner.
// 32-bit: the host dispatches at most 2**32 - 1 elements, and a GPU divides
// 32-bit integers in a few instructions, 64-bit ones in software.
struct grid_place {
  uint row;
  uint column;
};
inline grid_place place_of(uint e, uint inner) {
  const uint row = e / inner;
  return grid_place{row, e - row * inner};
}

// Threads take segment_elements_per_thread elements each (per_element.h's
// tiles; the host's grid agrees through segment_reduce_params.h).
constant constexpr uint K = mps_ops::segment_elements_per_thread;

}  // namespace

// The CPU's gradient of element j of a segment [start, end) whose column of
// data starts at `column` (stride inner), for mean, max, min and prod.
template <typename T>
inline float segment_gradient(mps_ops::segment_params p, float g, float result, float x, constant T* column,
                              long start, long end, long j) {
  float value = 0.0f;
  switch (p.reduction) {
    case reduce_mean:
      value = g / float(end - start);
      break;
    case reduce_max:
    case reduce_min: {
      if (x == result || x != x) {
        int ties = 0;
        for (long k = start; k < end; ++k) {
          const float y = float(column[k * p.inner]);
          ties += (y == result || y != y) ? 1 : 0;
        }
        value = (ties >= 2 && g > 0.0f) ? g / float(ties) : g;
      }
      break;
    }
    default: {  // prod
      if (x != 0.0f && !isnan(x)) {
        value = g * result / x;
      } else {
        float others = p.has_initial ? p.initial : 1.0f;
        for (long k = start; k < end; ++k) {
          if (k != j) {
            others *= float(column[k * p.inner]);
          }
        }
        value = g * others;
      }
      break;
    }
  }
  return value;
}

// Each thread's segments are started together: the offsets and the first
// element of every one are loaded before any result is stored (a store to
// out could alias data for all the compiler knows, so a load after a store
// waits for it), then each segment is folded on and stored.
template <typename T>
kernel void segment_reduce(
    device T* out [[buffer(0)]],
    constant T* data [[buffer(1)]],
    constant long* offsets [[buffer(2)]],
    constant mps_ops::segment_params& params [[buffer(3)]],
    uint thread_index [[thread_position_in_grid]]) {
  const mps_ops::segment_params p = params;  // read once, for the same reason
  const uint first = mps_ops::per_element_first<K>(thread_index), tile = mps_ops::elementwise_tile;
  const uint count = uint(p.outer * p.segments * p.inner);
  const float initial = p.has_initial ? p.initial : identity_of(p.reduction);
  ulong at_data[K];
  long remaining[K];
  float acc[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint e = first + k * tile;
    remaining[k] = -1;
    if (e < count) {
      const grid_place at = place_of(e, uint(p.inner));  // row: o * segments + s
      const uint o = at.row / uint(p.segments);
      const ulong entry = ulong(at.row) + o;  // offsets row o holds segments + 1 entries
      const long start = offsets[entry];
      remaining[k] = offsets[entry + 1] - start;
      at_data[k] = (ulong(o) * ulong(p.length) + ulong(start)) * ulong(p.inner) + at.column;
      acc[k] = remaining[k] > 0 ? fold(p.reduction, initial, float(data[at_data[k]])) : initial;
    }
  }
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    if (remaining[k] < 0) {
      continue;
    }
    for (long j = 1; j < remaining[k]; ++j) {
      acc[k] = fold(p.reduction, acc[k], float(data[at_data[k] + ulong(j) * ulong(p.inner)]));
    }
    float result = acc[k];
    if (p.reduction == reduce_mean) {
      result = remaining[k] > 0 ? result / float(remaining[k])
                                : (p.has_initial ? p.initial : numeric_limits<float>::quiet_NaN());
    }
    out[first + k * tile] = static_cast<T>(result);
  }
}

// rows[o * length + j]: o * segments + s for the segment s holding data row j
// of outer row o, or -1 past the last segment (unsafe lengths); int: the host
// allows outer * segments < 2**31. The last s with offsets[o][s] <= j: empty
// segments share their start with the next one. T: the data's type, which
// the host names it by (the kernel reads no data).
template <typename T>
kernel void segment_of_rows(
    device int* rows [[buffer(0)]],
    constant long* offsets [[buffer(1)]],
    constant mps_ops::segment_params& p [[buffer(2)]],
    uint r [[thread_position_in_grid]]) {
  if (ulong(r) >= ulong(p.outer * p.length)) {
    return;
  }
  const uint o = r / uint(p.length);
  const long j = long(r - o * uint(p.length));
  constant long* row = offsets + ulong(o) * ulong(p.segments + 1);
  long lo = 0, hi = p.segments - 1;
  while (lo < hi) {
    const long mid = (lo + hi + 1) / 2;
    if (row[mid] <= j) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  rows[r] = (j < row[lo] || j >= row[lo + 1]) ? -1 : int(long(o) * p.segments + lo);
}

// Each element's segment, then its gradient and result, are loaded for all of
// a thread's elements before any store (as in the forward).
template <typename T>
kernel void segment_reduce_backward(
    device T* grad_data [[buffer(0)]],
    constant T* grad [[buffer(1)]],
    constant T* output [[buffer(2)]],
    constant T* data [[buffer(3)]],
    constant long* offsets [[buffer(4)]],
    constant int* rows [[buffer(5)]],
    constant mps_ops::segment_params& params [[buffer(6)]],
    uint thread_index [[thread_position_in_grid]]) {
  const mps_ops::segment_params p = params;
  const uint first = mps_ops::per_element_first<K>(thread_index), tile = mps_ops::elementwise_tile;
  const uint count = uint(p.outer * p.length * p.inner), inner = uint(p.inner);
  int segment_row[K];  // -1: none (past the last segment, or past the grid)
  grid_place place[K];  // each element's data row and column, divided out once
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint e = first + k * tile;
    place[k] = place_of(e, inner);
    segment_row[k] = e < count ? rows[place[k].row] : -1;
  }
  // sum and mean read neither the result nor the data.
  const bool reads_data = p.reduction != reduce_sum && p.reduction != reduce_mean;
  float g[K], result[K], x[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint e = first + k * tile;
    if (segment_row[k] >= 0) {
      const ulong at_out = ulong(segment_row[k]) * ulong(p.inner) + place[k].column;
      g[k] = float(grad[at_out]);
      result[k] = reads_data ? float(output[at_out]) : 0.0f;
      x[k] = reads_data ? float(data[e]) : 0.0f;
    }
  }
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint e = first + k * tile;
    if (e >= count) {
      continue;
    }
    if (segment_row[k] < 0) {
      grad_data[e] = static_cast<T>(0.0f);  // rows past the last segment (unsafe lengths)
      continue;
    }
    float value = g[k];
    if (p.reduction != reduce_sum) {
      const uint o = uint(segment_row[k]) / uint(p.segments);
      const ulong entry = ulong(segment_row[k]) + o;
      const long start = offsets[entry], end = offsets[entry + 1];
      // Data row r of this column is element e + (r - j) * inner.
      const long j = long(place[k].row) - long(o) * p.length;
      constant T* column = data + (long(e) - j * p.inner);
      value = segment_gradient(p, g[k], result[k], x[k], column, start, end, j);
    }
    grad_data[e] = static_cast<T>(value);
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, segment_reduce, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, segment_reduce_backward, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, segment_of_rows, dense)
