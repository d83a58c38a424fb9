// _weight_norm_interface and its backward (the override ops of
// csrc/operations/weight_norm.mm): w = v * g / ||v||, each norm over every
// dim of v but `dim` (0 or the last). The host views v as (N, C, inner), C
// the size of `dim`, so the channel passes of batch_norm.metal serve both
// (csrc/runtime/channel_pass.h):
//   forward   the norms (a reduction of squares, in float), then one thread
//             per channel (its coefficient g / norm), then batch_norm_apply
//             (x - 0) * (g / norm) + 0;
//   backward  per channel sum(grad_w * v) in one reduction over both, then
//             one thread per channel (grad_g = sum / norm, the
//             coefficients), then batch_norm_backward_apply's
//             products_formula: g / norm * grad_w - g * sum / norm^3 * v,
//             the CPU's order (its infinities cancel where its do).
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/reduction.h>
#include <mps_ops/row_walk.h>
#include <mps_ops/shape_limits.h>
#include "batch_norm_params.h"
using namespace metal;

// The norm: the root of the sum of squares, in float (the CPU's opmath).
template <typename In>
struct weight_norm_norms_reducer : mps_ops::float_sum {
  using params = mps_ops::no_params;
  static state fold(state s, float v) { return s + v * v; }
  static float finish(state s, constant params&) { return sqrt(s); }
};

// Norms in float for every input dtype (the CPU's, for half and bfloat16).
REGISTER_REDUCE_ONE_OP(weight_norm_norms, float, half)
REGISTER_REDUCE_ONE_OP(weight_norm_norms, float, bfloat)
REGISTER_REDUCE_ONE_OP(weight_norm_norms, float, float)

// The forward over dim 0 in one kernel: each channel's elements are a row of
// the contiguous v, and the rows mapping (SliceMapping::register_rows) gives
// a row threads enough to hold it in registers where it fits (float rows of
// up to 8 x 256): the sum of squares, merged across the row's threads, the
// norm, then w = x * (g / norm) from the held values, one read of v where
// the three passes read it twice. Longer rows (and 2-byte ones, which the
// host maps 32 per thread: shape_limits.h) read the row again for the write,
// from the cache. The row's first thread writes the norm. Rows are
// contiguous (the host's (channels, rest) views of contiguous tensors), so
// elements are indexed by their 32-bit position, no 64-bit stride product
// per access (H100 backward: see docs/design.md).
template <typename T>
kernel void weight_norm_rows(
    device T* w [[buffer(0)]],
    device float* norms [[buffer(1)]],
    constant T* v [[buffer(2)]],
    constant T* g [[buffer(3)]],
    constant mps_ops::reduction_layout& layout [[buffer(4)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup float partials[32];
  const mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const mps_ops::slice_thread t = mps_ops::place_thread(layout, group.y, at);
  const mps_ops::row_walk row = mps_ops::walk_row(layout, t);
  constant T* row_in = v + row.start;
  device T* row_out = w + row.start;
  const uint n = row.length, step = t.step;
  constexpr uint held = mps_ops::register_row_elements;
  // The same test for every thread of the group (the layout's row length):
  // both branches merge through barriers.
  const bool in_registers = uint(layout.inner_numel) <= held * step;
  float x[held];
  float sum = 0.0f;
  if (in_registers) {
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < held; ++k) {
      const uint i = t.first + k * step;
      x[k] = i < n ? float(row_in[i]) : 0.0f;
      sum += x[k] * x[k];
    }
  } else {
    for (uint i = t.first; i < n; i += step) {
      const float value = float(row_in[i]);
      sum += value * value;
    }
  }
  sum = mps_ops::merge_consecutive_to_all<mps_ops::float_sum>(sum, partials, at, step);
  if (!t.active) {
    return;
  }
  const float norm = sqrt(sum);
  if (t.first == 0) {
    norms[t.slice] = norm;
  }
  const float scale = float(g[t.slice]) / norm;
  if (in_registers) {
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < held; ++k) {
      const uint i = t.first + k * step;
      if (i < n) {
        row_out[i] = static_cast<T>(x[k] * scale);
      }
    }
  } else {
    for (uint i = t.first; i < n; i += step) {
      row_out[i] = static_cast<T>(float(row_in[i]) * scale);
    }
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, weight_norm_rows, reduce)

// The backward over dim 0 in one kernel, as weight_norm_rows: a row's
// grad_w and v held in registers where they fit, sum(grad_w * v) merged
// across the row's threads, then grad_g = sum / norm (the row's first
// thread) and grad_v = a * grad_w - b * v in the CPU's order (a = g / norm,
// b = a * (sum / norm) / norm); longer rows read both again. float only:
// the host sends 2-byte rows to the three passes.
template <typename T>
kernel void weight_norm_backward_rows(
    device T* grad_v [[buffer(0)]],
    device T* grad_g [[buffer(1)]],
    constant T* grad_w [[buffer(2)]],
    constant T* v [[buffer(3)]],
    constant T* g [[buffer(4)]],
    constant float* norms [[buffer(5)]],
    constant mps_ops::reduction_layout& layout [[buffer(6)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup float partials[32];
  const mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const mps_ops::slice_thread t = mps_ops::place_thread(layout, group.y, at);
  const mps_ops::row_walk row = mps_ops::walk_row(layout, t);
  constant T* row_grad = grad_w + row.start;
  constant T* row_v = v + row.start;
  device T* row_out = grad_v + row.start;
  const uint n = row.length, step = t.step;
  constexpr uint held = mps_ops::register_row_elements;
  const bool in_registers = uint(layout.inner_numel) <= held * step;  // alike for the group
  float d[held], x[held];
  float sum = 0.0f;
  if (in_registers) {
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < held; ++k) {
      const uint i = t.first + k * step;
      d[k] = i < n ? float(row_grad[i]) : 0.0f;
      x[k] = i < n ? float(row_v[i]) : 0.0f;
      sum += d[k] * x[k];
    }
  } else {
    for (uint i = t.first; i < n; i += step) {
      sum += float(row_grad[i]) * float(row_v[i]);
    }
  }
  sum = mps_ops::merge_consecutive_to_all<mps_ops::float_sum>(sum, partials, at, step);
  if (!t.active) {
    return;
  }
  const float norm = norms[t.slice];
  if (t.first == 0) {
    grad_g[t.slice] = static_cast<T>(sum / norm);
  }
  const float a = float(g[t.slice]) / norm;
  const float b = a * (sum / norm) / norm;
  if (in_registers) {
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < held; ++k) {
      const uint i = t.first + k * step;
      if (i < n) {
        row_out[i] = static_cast<T>(d[k] * a - x[k] * b);
      }
    }
  } else {
    for (uint i = t.first; i < n; i += step) {
      row_out[i] = static_cast<T>(float(row_grad[i]) * a - float(row_v[i]) * b);
    }
  }
}

MPS_OPS_INSTANTIATE_FOR_TYPE(weight_norm_backward_rows, reduce, float)

// One thread per channel: the forward's coefficients (0, g / norm, 0, 0).
template <typename T>
kernel void weight_norm_channels(
    device float* coefficients [[buffer(0)]],
    constant T* g [[buffer(1)]],
    constant float* norms [[buffer(2)]],
    constant uint& channels [[buffer(3)]],
    uint c [[thread_position_in_grid]]) {
  if (c >= channels) {
    return;
  }
  // (x - 0) * scale + -0: adding -0 keeps a -0 product's sign, as the
  // CPU's v * (g / norm) does; +0 would not.
  device float* out = coefficients + ulong(c) * mps_ops::batch_norm_coefficients;  // 2**30 channels and more
  out[0] = 0.0f;
  out[1] = float(g[c]) / norms[c];
  out[2] = -0.0f;
  out[3] = 0.0f;
}

// Backward's reduction reads grad_w and v of one layout, folding their
// products (a reduction.h source of two inputs).
template <typename In>
struct product_pair {
  using value = float;
  static constexpr uint element_bytes() { return sizeof(In); }
  constant In* a;
  constant In* b;
};
template <typename In, typename I>
inline float load(product_pair<In> source, I offset) {
  return float(source.a[offset]) * float(source.b[offset]);
}

// Per channel: sum(grad_w * v).
template <typename In>
struct weight_norm_backward_sums_reducer : mps_ops::float_sum {
  using params = mps_ops::no_params;
  static state fold(state s, float product) { return s + product; }
  static float finish(state s, constant params&) { return s; }
};

// reduction.h's reduce_one over the pair source: each channel's sum in
// float (chunk states where the host split long channels, merged by
// reduce_one_merge).
template <typename In>
kernel void weight_norm_backward_sums(
    device float* sums [[buffer(0)]],
    device uchar* chunk_states [[buffer(1)]],
    constant In* grad_w [[buffer(2)]],
    constant In* v [[buffer(3)]],
    constant mps_ops::reduction_layout& layout [[buffer(4)]],
    constant mps_ops::no_params& params [[buffer(5)]],
    uint3 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint3 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  using reducer = weight_norm_backward_sums_reducer<In>;
  threadgroup float partials[mps_ops::partial_states];
  mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const mps_ops::slice_thread t = mps_ops::place_thread(layout, group.y, at);
  const float s = mps_ops::reduce_slice_of<reducer>(product_pair<In>{grad_w, v}, layout, t, partials, at, group.z);
  if (mps_ops::finishes_slice(t)) {
    if (layout.chunk_shift != 0) {
      mps_ops::store_chunk_state<reducer>(chunk_states, layout, t.slice, group.z, s);
    } else {
      sums[t.slice] = reducer::finish(s, params);
    }
  }
}

// One thread per channel: grad_g = sum / norm and the backward's
// coefficients (0, b, 0, a): the CPU's a = g / norm and
// b = a * grad_g / norm of its a * grad_w - b * v.
template <typename T>
kernel void weight_norm_backward_channels(
    device T* grad_g [[buffer(0)]],
    device float* coefficients [[buffer(1)]],
    constant float* sums [[buffer(2)]],
    constant T* g [[buffer(3)]],
    constant float* norms [[buffer(4)]],
    constant uint& channels [[buffer(5)]],
    uint c [[thread_position_in_grid]]) {
  if (c >= channels) {
    return;
  }
  const float norm = norms[c], sum = sums[c];
  grad_g[c] = static_cast<T>(sum / norm);
  device float* out = coefficients + ulong(c) * mps_ops::batch_norm_coefficients;  // 2**30 channels and more
  const float a = float(g[c]) / norm;
  out[0] = 0.0f;
  out[1] = a * (sum / norm) / norm;
  out[2] = 0.0f;
  out[3] = a;
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, weight_norm_channels, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, weight_norm_backward_channels, dense)

#define REGISTER_WEIGHT_NORM_BACKWARD_SUMS(T)                                                         \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(weight_norm_backward_sums, reduce, float, T),                 \
                      weight_norm_backward_sums, T)                                                   \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(weight_norm_backward_sums, merge, float, T),                  \
                      mps_ops::reduce_one_merge, weight_norm_backward_sums_reducer<T>, float, T)
REGISTER_WEIGHT_NORM_BACKWARD_SUMS(half)
REGISTER_WEIGHT_NORM_BACKWARD_SUMS(bfloat)
REGISTER_WEIGHT_NORM_BACKWARD_SUMS(float)
