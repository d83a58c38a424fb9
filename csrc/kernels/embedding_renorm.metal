// embedding_renorm_: every row of `weight` named in `indices` whose
// norm_type-norm (torch.norm's: -inf the smallest magnitude, inf the largest,
// 0 the count of non-zeros) exceeds max_norm is scaled by max_norm / (norm + 1e-7), once
// however often it is named, as the CPU does. `share` threads per index
// (row_threads: about 32 elements each), several indices per threadgroup;
// the first thread of an index claims its row (an atomic flag per row), and
// only the claiming index's threads renorm it. The host has checked every
// index is in range.
#include <metal_stdlib>
#include <mps_ops/reduction.h>

#include "embedding_renorm_params.h"
using namespace metal;

namespace {

// Elements loaded together: a run of loads in flight per thread, and in the
// rescale the loads of a run before its stores (a store to a row could alias
// the next loads for all the compiler knows, so a load after a store waits
// for it).
constant constexpr uint run = 4;

// The norm's partial state of one magnitude.
inline float fold_norm(float p, float acc, float a) {
  if (isinf(p)) {
    return p > 0.0f ? mps_ops::nan_max(acc, a) : mps_ops::nan_min(acc, a);
  }
  if (p == 0.0f) {
    return acc + (a != 0.0f ? 1.0f : 0.0f);
  }
  return acc + (p == 1.0f ? a : (p == 2.0f ? a * a : pow(a, p)));
}

}  // namespace

template <typename T>
kernel void embedding_renorm(
    device T* weight [[buffer(0)]],
    device atomic_int* claimed [[buffer(1)]],
    constant long* indices [[buffer(2)]],
    constant mps_ops::embedding_renorm_params& params [[buffer(3)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup float partials[32];
  const mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const uint share = params.share, first = index % share;
  const long named = long(group.y) * long(group_size.x / share) + long(index / share);
  long row = 0;
  float mine = 0.0f;
  if (named < params.count) {
    row = indices[named];
    row = row < 0 ? row + params.rows_total : row;
    if (first == 0) {
      mine = atomic_exchange_explicit(&claimed[row], 1, memory_order_relaxed) == 0 ? 1.0f : 0.0f;
    }
  }
  // The claim reaches every thread of the index (every thread merges).
  mine = mps_ops::merge_consecutive_to_all<mps_ops::float_max>(mine, partials, at, share);
  const uint n = mine > 0.0f ? uint(params.dim) : 0;
  device T* values = weight + row * params.row_stride;
  const float p = params.norm_type;
  // -inf: the smallest magnitude (torch.norm's), so it starts at +inf.
  float acc = p == -numeric_limits<float>::infinity() ? numeric_limits<float>::infinity() : 0.0f;
  for (uint first_j = first; first_j < n; first_j += run * share) {
    float a[run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      const uint j = first_j + k * share;
      a[k] = j < n ? abs(float(values[long(j) * params.column_stride])) : 0.0f;
    }
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      if (first_j + k * share < n) {
        acc = fold_norm(p, acc, a[k]);
      }
    }
  }
  // p is uniform: every thread takes the same branch.
  if (isinf(p) && p > 0.0f) {
    acc = mps_ops::merge_consecutive_to_all<mps_ops::float_max>(acc, partials, at, share);
  } else if (isinf(p)) {
    acc = mps_ops::merge_consecutive_to_all<mps_ops::float_min>(acc, partials, at, share);
  } else {
    acc = mps_ops::merge_consecutive_to_all<mps_ops::float_sum>(acc, partials, at, share);
  }
  const float norm = (isinf(p) || p == 0.0f || p == 1.0f) ? acc : (p == 2.0f ? sqrt(acc) : pow(acc, 1.0f / p));
  if (n == 0 || !(norm > params.max_norm)) {
    return;
  }
  const float scale = params.max_norm / (norm + 1e-7f);
  for (uint first_j = first; first_j < n; first_j += run * share) {
    float a[run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      const uint j = first_j + k * share;
      a[k] = j < n ? float(values[long(j) * params.column_stride]) : 0.0f;
    }
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      const uint j = first_j + k * share;
      if (j < n) {
        values[long(j) * params.column_stride] = static_cast<T>(a[k] * scale);
      }
    }
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, embedding_renorm, reduce)
