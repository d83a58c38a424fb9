// embedding_renorm_: every row of `weight` named in `indices` whose
// norm_type-norm (torch.norm's: -inf the smallest magnitude, inf the largest,
// 0 the count of non-zeros) exceeds max_norm is scaled by max_norm / (norm + 1e-7), once
// however often it is named, as the CPU does. One threadgroup per index;
// the first group to claim a row (an atomic flag per row) renorms it, the
// others stop. The host has checked every index is in range.
#include <metal_stdlib>
#include <mps_ops/reduction.h>

#include "embedding_renorm_params.h"
using namespace metal;

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
  threadgroup int mine;
  threadgroup float row_norm;
  mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  long row = indices[group.y];
  row = row < 0 ? row + params.rows_total : row;
  if (index == 0) {
    mine = atomic_exchange_explicit(&claimed[row], 1, memory_order_relaxed) == 0 ? 1 : 0;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (mine == 0) {
    return;  // uniform across the group: every thread read the same flag
  }
  device T* values = weight + row * params.row_stride;
  const float p = params.norm_type;
  // -inf: the smallest magnitude (torch.norm's), so it starts at +inf.
  float acc = p == -numeric_limits<float>::infinity() ? numeric_limits<float>::infinity() : 0.0f;
  for (long j = index; j < params.dim; j += group_size.x) {
    const float a = abs(float(values[j * params.column_stride]));
    if (isinf(p)) {
      acc = p > 0.0f ? mps_ops::nan_max(acc, a) : mps_ops::nan_min(acc, a);
    } else if (p == 0.0f) {
      acc += a != 0.0f ? 1.0f : 0.0f;
    } else {
      acc += p == 1.0f ? a : (p == 2.0f ? a * a : pow(a, p));
    }
  }
  // p is uniform: every thread takes the same branch.
  if (isinf(p) && p > 0.0f) {
    acc = mps_ops::merge_threadgroup<mps_ops::float_max>(acc, partials, at);
  } else if (isinf(p)) {
    acc = mps_ops::merge_threadgroup<mps_ops::float_min>(acc, partials, at);
  } else {
    acc = mps_ops::merge_threadgroup<mps_ops::float_sum>(acc, partials, at);
  }
  if (index == 0) {
    row_norm = (isinf(p) || p == 0.0f || p == 1.0f) ? acc : (p == 2.0f ? sqrt(acc) : pow(acc, 1.0f / p));
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const float norm = row_norm;
  if (norm > params.max_norm) {
    const float scale = params.max_norm / (norm + 1e-7f);
    for (long j = index; j < params.dim; j += group_size.x) {
      values[j * params.column_stride] = static_cast<T>(float(values[j * params.column_stride]) * scale);
    }
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, embedding_renorm, reduce)
