// native_layer_norm_backward (an override op: its stock MPS kernel runs
// MPSGraph in every transformer's backward pass). With the input as rows of
// N (the normalized shape's numel), m and r a row's mean and rstd, g the
// weight (1 without one) and dy the incoming gradient, the CPU's formulas,
// each product in its order (so overflows fall where its fall), in float:
//   ds = sum_j dy x g,  db = sum_j dy g                    (one pass, both sums)
//   dx = r dy g + b x + c,  b = (db m - ds) r^3 / N,  c = -b m - db r / N
//   dgamma[j] = sum_i dy (x - m) r,  dbeta[j] = sum_i dy   (over the rows)
// (The CPU's dgamma takes r x + (-r m), which cancels, fused or not by its
// ISA: a one-element row's gradient is its rounding, 3.9e-5 or -4.9e-4 for
// x = 5.6, where (x - m) r gives the exact 0.)
// dx takes the reductions' rows mapping (several rows per threadgroup, the
// two sums reaching all of a row's threads; the second pass reads the row
// again from the cache). The weight and bias gradients take two passes
// without atomics: each group of rows sums its chunk per column (neighbouring
// threads, neighbouring columns), then one thread per column sums the
// chunks in order: the same bits on every run. The host passes mean, rstd
// and the weight as float, every operand contiguous.
#include <metal_stdlib>
#include <mps_ops/reduction.h>
#include <mps_ops/row_walk.h>

#include "layer_norm_backward_params.h"
using namespace metal;

namespace {

// (ds, db) of a row: two float sums merged together.
struct row_sums {
  float ds;
  float db;
};

struct row_sums_sum {
  using state = row_sums;
  static state identity() { return state{0.0f, 0.0f}; }
  static state merge(state a, state b) { return state{a.ds + b.ds, a.db + b.db}; }
  static state shuffle_xor(state s, ushort mask) {
    return state{mps_ops::shuffle_xor(s.ds, mask), mps_ops::shuffle_xor(s.db, mask)};
  }
};

// Loads in flight together per thread, before they are used (runs of 2
// measured 0.44x torch on an H100 for half rows of 1024).
constant constexpr uint row_run = 4;
// Rows of a column summed per load run in the weight gradients' first pass.
constant constexpr uint column_run = 4;

// A thread's run of a row, both passes: dy, x and gamma (1 without a
// weight) at first, first + step, ..., zeros past the row's end.
template <typename T>
inline void load_run(thread float* d, thread float* v, thread float* w, constant T* row_dy, constant T* row_x,
                     constant float* gamma, int weighted, uint first, uint step, uint n) {
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < row_run; ++k) {
    const uint j = first + k * step;
    d[k] = j < n ? float(row_dy[j]) : 0.0f;
    v[k] = j < n ? float(row_x[j]) : 0.0f;
    w[k] = j < n && weighted ? gamma[j] : 1.0f;
  }
}

}  // namespace

template <typename T>
kernel void layer_norm_backward(
    device T* dx [[buffer(0)]],
    constant T* dy [[buffer(1)]],
    constant T* x [[buffer(2)]],
    constant float* mean [[buffer(3)]],
    constant float* rstd [[buffer(4)]],
    constant float* gamma [[buffer(5)]],
    constant mps_ops::reduction_layout& layout [[buffer(6)]],
    constant mps_ops::layer_norm_backward_params& p [[buffer(7)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup row_sums partials[32];
  const mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const mps_ops::slice_thread t = mps_ops::place_thread(layout, group.y, at);
  const mps_ops::row_walk row = mps_ops::walk_row(layout, t);
  constant T* row_dy = dy + row.start;
  constant T* row_x = x + row.start;
  device T* row_dx = dx + row.start;
  const uint n = row.length, step = t.step;
  row_sums sums = row_sums_sum::identity();
  for (uint first = t.first; first < n; first += row_run * step) {
    float d[row_run], v[row_run], w[row_run];
    load_run(d, v, w, row_dy, row_x, gamma, p.weighted, first, step, n);
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < row_run; ++k) {
      sums.ds += d[k] * v[k] * w[k];
      sums.db += d[k] * w[k];
    }
  }
  const row_sums total = mps_ops::merge_consecutive_to_all<row_sums_sum>(sums, partials, at, step);
  if (!t.active) {
    return;
  }
  const float m = mean[t.slice], a = rstd[t.slice];
  const float scale = 1.0f / float(p.columns);
  const float b = (total.db * m - total.ds) * a * a * a * scale;
  const float c = -b * m - total.db * a * scale;
  // A row of one element normalizes to 0 whatever it holds: its gradient is
  // 0 (NaN where an operand is not finite), where the formula leaves its
  // rounding (a dy g - dy g a: 4.9e-4 for rstd 316; CUDA's own gives 0).
  const bool one_column = p.columns == 1;
  for (uint first = t.first; first < n; first += row_run * step) {
    float d[row_run], v[row_run], w[row_run];
    load_run(d, v, w, row_dy, row_x, gamma, p.weighted, first, step, n);
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < row_run; ++k) {
      const uint j = first + k * step;
      if (j < n) {
        const float value = a * d[k] * w[k] + b * v[k] + c;
        row_dx[j] = static_cast<T>(one_column ? value * 0.0f : value);
      }
    }
  }
}

// Weight and bias gradients, first pass: thread (j, chunk) sums column j
// over the chunk's rows into partials[(chunk * columns + j) * 2 + {0, 1}].
template <typename T>
kernel void layer_norm_backward_params_partials(
    device float* partials [[buffer(0)]],
    constant T* dy [[buffer(1)]],
    constant T* x [[buffer(2)]],
    constant float* mean [[buffer(3)]],
    constant float* rstd [[buffer(4)]],
    constant mps_ops::layer_norm_backward_params& p [[buffer(5)]],
    uint2 pos [[thread_position_in_grid]]) {
  const long j = long(pos.x);
  if (j >= p.columns) {
    return;
  }
  const long first = long(pos.y) * p.rows_per_chunk, last = min(first + p.rows_per_chunk, p.rows);
  float dgamma = 0.0f, dbeta = 0.0f;
  long at = first * p.columns + j;
  // A run of rows loaded before any is added: one load in flight per thread
  // leaves the memory system idle (the sums keep the rows' order).
  for (long i = first; i < last; i += column_run, at += column_run * p.columns) {
    float g[column_run], v[column_run], m[column_run], r[column_run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < column_run; ++k) {
      const bool in = i + long(k) < last;
      g[k] = in ? float(dy[at + long(k) * p.columns]) : 0.0f;
      v[k] = in ? float(x[at + long(k) * p.columns]) : 0.0f;
      m[k] = in ? mean[i + k] : 0.0f;
      r[k] = in ? rstd[i + k] : 0.0f;
    }
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < column_run; ++k) {
      if (i + long(k) < last) {
        dgamma += g[k] * ((v[k] - m[k]) * r[k]);
        dbeta += g[k];
      }
    }
  }
  const long slot = (long(pos.y) * p.columns + j) * 2;
  partials[slot] = dgamma;
  partials[slot + 1] = dbeta;
}

// Second pass, written as the weight's type Out: merge_slices threads per
// column (neighbouring columns in neighbouring threads), slice s adding
// chunks s, s + merge_slices, ... in order, runs of merge_run loaded before
// any is added; then slice 0 adds the slices' sums in slice order: the same
// bits on every run. One thread per column left most of a GPU idle (1024
// columns: 4 groups, 45 us on an H100 for 256 chunks).
constant constexpr uint merge_run = 8;

template <typename Out>
kernel void layer_norm_backward_params_merge(
    device Out* dgamma [[buffer(0)]],
    device Out* dbeta [[buffer(1)]],
    constant float* partials [[buffer(2)]],
    constant mps_ops::layer_norm_backward_params& p [[buffer(3)]],
    uint2 position [[thread_position_in_grid]],
    uint2 local [[thread_position_in_threadgroup]]) {
  threadgroup float slice_gamma[mps_ops::layer_norm_merge_group];
  threadgroup float slice_beta[mps_ops::layer_norm_merge_group];
  constexpr long slices = mps_ops::layer_norm_merge_slices;
  const long j = long(position.x);
  // No return before the barrier: threads past the last column add nothing.
  const bool column = j < p.columns;
  float sum_gamma = 0.0f, sum_beta = 0.0f;
  for (long chunk = long(position.y); column && chunk < p.chunks; chunk += merge_run * slices) {
    float g[merge_run], b[merge_run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < merge_run; ++k) {
      const long c = chunk + long(k) * slices;
      const long slot = (c * p.columns + j) * 2;
      const bool in = c < p.chunks;
      g[k] = in ? partials[slot] : 0.0f;
      b[k] = in ? partials[slot + 1] : 0.0f;
    }
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < merge_run; ++k) {
      if (chunk + long(k) * slices < p.chunks) {
        sum_gamma += g[k];
        sum_beta += b[k];
      }
    }
  }
  const uint mine = local.y * mps_ops::layer_norm_merge_columns + local.x;
  slice_gamma[mine] = sum_gamma;
  slice_beta[mine] = sum_beta;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (local.y != 0 || !column) {
    return;
  }
  for (uint s = 1; s < mps_ops::layer_norm_merge_slices; ++s) {
    sum_gamma += slice_gamma[s * mps_ops::layer_norm_merge_columns + local.x];
    sum_beta += slice_beta[s * mps_ops::layer_norm_merge_columns + local.x];
  }
  dgamma[j] = static_cast<Out>(sum_gamma);
  dbeta[j] = static_cast<Out>(sum_beta);
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, layer_norm_backward, reduce)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, layer_norm_backward_params_partials, reduce)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, layer_norm_backward_params_merge, reduce)
