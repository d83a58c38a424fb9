// _segment_reduce and its backward. The data is (outer, length, inner) around
// the reduced axis; segment s of outer row o covers rows offsets[o][s] ..
// offsets[o][s+1]. Forward: one thread per output element (o, s, i) folding
// its segment from `initial` (or the reduction's identity), in float; mean
// divides by the segment's length, and an empty segment is `initial`, or NaN
// without one. max and min propagate NaN. Backward: one thread per data
// element, finding its segment by binary search, as the CPU's formulas:
//   sum: g   mean: g / length
//   max/min: g for each element equal to the result (NaN: each NaN), divided
//            by their number only where g > 0: the CPU kernel splits only
//            positive gradients among ties, and we match it
//   prod: g * result / x, or for x == 0 the product of the others (0 if another is 0)
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
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

}  // namespace

template <typename T>
kernel void segment_reduce(
    device T* out [[buffer(0)]],
    constant T* data [[buffer(1)]],
    constant long* offsets [[buffer(2)]],
    constant mps_ops::segment_params& p [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  const long i = long(index) % p.inner, s = (long(index) / p.inner) % p.segments;
  const long o = long(index) / (p.inner * p.segments);
  const long start = offsets[o * (p.segments + 1) + s], end = offsets[o * (p.segments + 1) + s + 1];
  float acc = p.has_initial ? p.initial : identity_of(p.reduction);
  for (long j = start; j < end; ++j) {
    acc = fold(p.reduction, acc, float(data[(o * p.length + j) * p.inner + i]));
  }
  if (p.reduction == reduce_mean) {
    const long count = end - start;
    acc = count > 0 ? acc / float(count) : (p.has_initial ? p.initial : numeric_limits<float>::quiet_NaN());
  }
  out[index] = static_cast<T>(acc);
}

template <typename T>
kernel void segment_reduce_backward(
    device T* grad_data [[buffer(0)]],
    constant T* grad [[buffer(1)]],
    constant T* output [[buffer(2)]],
    constant T* data [[buffer(3)]],
    constant long* offsets [[buffer(4)]],
    constant mps_ops::segment_params& p [[buffer(5)]],
    uint index [[thread_position_in_grid]]) {
  const long i = long(index) % p.inner, j = (long(index) / p.inner) % p.length;
  const long o = long(index) / (p.inner * p.length);
  constant long* row = offsets + o * (p.segments + 1);
  // The segment holding row j: the last s with row[s] <= j (empty segments
  // share their start with the next one, so take the last).
  long lo = 0, hi = p.segments - 1;
  while (lo < hi) {
    const long mid = (lo + hi + 1) / 2;
    if (row[mid] <= j) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const long s = lo, start = row[s], end = row[s + 1];
  if (j < start || j >= end) {
    grad_data[index] = static_cast<T>(0.0f);  // rows past the last segment (unsafe lengths)
    return;
  }
  const long at_out = (o * p.segments + s) * p.inner + i;
  const float g = float(grad[at_out]), result = float(output[at_out]);
  const float x = float(data[(o * p.length + j) * p.inner + i]);
  float value = 0.0f;
  switch (p.reduction) {
    case reduce_sum:
      value = g;
      break;
    case reduce_mean:
      value = g / float(end - start);
      break;
    case reduce_max:
    case reduce_min: {
      if (x == result || x != x) {
        int ties = 0;
        for (long k = start; k < end; ++k) {
          const float y = float(data[(o * p.length + k) * p.inner + i]);
          ties += (y == result || y != y) ? 1 : 0;
        }
        value = (ties >= 2 && g > 0.0f) ? g / float(ties) : g;
      }
      break;
    }
    default: {  // prod
      if (x != 0.0f) {
        value = g * result / x;
      } else {
        float others = p.has_initial ? p.initial : 1.0f;
        for (long k = start; k < end; ++k) {
          if (k != j) {
            others *= float(data[(o * p.length + k) * p.inner + i]);
          }
        }
        value = g * others;
      }
      break;
    }
  }
  grad_data[index] = static_cast<T>(value);
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, segment_reduce, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, segment_reduce_backward, dense)
