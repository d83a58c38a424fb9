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
#include <mps_ops/element_pairs.h>
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

// A thread's run of a row's words, both passes: dy and x words and gamma
// (1 without a weight) for their elements, zeros past the row's end.
template <typename Held>
inline void load_run(thread typename Held::word* d, thread typename Held::word* v, thread float* w,
                     constant typename Held::stored* row_dy, constant typename Held::stored* row_x,
                     constant float* gamma, int weighted, uint first, uint step, uint n) {
  constexpr uint width = Held::width();
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < row_run; ++k) {
    const uint j = first + k * step;
    d[k] = Held::load(j < n ? row_dy[j] : typename Held::stored(0));
    v[k] = Held::load(j < n ? row_x[j] : typename Held::stored(0));
    _Pragma("clang loop unroll(full)")
    for (uint c = 0; c < width; ++c) {
      w[k * width + c] = j < n && weighted ? gamma[j * width + c] : 1.0f;
    }
  }
}

}  // namespace

// dx, one row per thread slice. With Held = element_pairs (half and bfloat
// rows of an even length, the host's choice), two elements per 32-bit load
// and store: half the instructions for the same bytes.
template <typename Held, typename T>
inline void input_gradient_rows(device T* dx, constant T* dy, constant T* x, constant float* mean,
                                constant float* rstd, constant float* gamma,
                                constant mps_ops::reduction_layout& layout,
                                constant mps_ops::layer_norm_backward_params& p, threadgroup row_sums* partials,
                                uint group, thread const mps_ops::group_position& at) {
  using stored = typename Held::stored;
  using word = typename Held::word;
  constexpr uint width = Held::width();
  const mps_ops::slice_thread t = mps_ops::place_thread(layout, group, at);
  const mps_ops::row_walk row = mps_ops::walk_row(layout, t);
  constant stored* row_dy = reinterpret_cast<constant stored*>(dy + row.start);
  constant stored* row_x = reinterpret_cast<constant stored*>(x + row.start);
  device stored* row_dx = reinterpret_cast<device stored*>(dx + row.start);
  const uint n = row.length / width, step = t.step;
  row_sums sums = row_sums_sum::identity();
  for (uint first = t.first; first < n; first += row_run * step) {
    word d[row_run], v[row_run];
    float w[row_run * width];
    load_run<Held>(d, v, w, row_dy, row_x, gamma, p.weighted, first, step, n);
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < row_run; ++k) {
      _Pragma("clang loop unroll(full)")
      for (uint c = 0; c < width; ++c) {
        const float dk = Held::element(d[k], c), weight = w[k * width + c];
        sums.ds += dk * Held::element(v[k], c) * weight;
        sums.db += dk * weight;
      }
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
    word d[row_run], v[row_run];
    float w[row_run * width];
    load_run<Held>(d, v, w, row_dy, row_x, gamma, p.weighted, first, step, n);
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < row_run; ++k) {
      if (first + k * step < n) {
        float values[width];
        _Pragma("clang loop unroll(full)")
        for (uint e = 0; e < width; ++e) {
          const float value =
              a * Held::element(d[k], e) * w[k * width + e] + b * Held::element(v[k], e) + c;
          values[e] = one_column ? value * 0.0f : value;
        }
        row_dx[first + k * step] = Held::store(values);
      }
    }
  }
}

// Host names: layer_norm_backward_reduce_T_T, and for half and bfloat
// layer_norm_backward_pairs_reduce_T_T.
template <typename Held, typename T>
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
  input_gradient_rows<Held>(dx, dy, x, mean, rstd, gamma, layout, p, partials, group.y, at);
}

// Weight and bias gradients, first pass: thread (j, chunk) sums column j
// over the chunk's rows into partials[(chunk * columns + j) * 2 + {0, 1}];
// with Held = element_pairs (half and bfloat, an even number of columns,
// the host's choice), columns 2j and 2j + 1 from 32-bit loads: half the
// load instructions for the same bytes (H200, half: see design.md), each
// column summed in the same order.
template <typename Held, typename T>
inline void parameter_partials(device float* partials, constant T* dy, constant T* x, constant float* mean,
                               constant float* rstd, constant mps_ops::layer_norm_backward_params& p, uint2 pos) {
  using stored = typename Held::stored;
  using word = typename Held::word;
  constexpr uint width = Held::width();
  const long words_per_row = p.columns / long(width), j = long(pos.x);
  if (j >= words_per_row) {
    return;
  }
  constant stored* dy_words = reinterpret_cast<constant stored*>(dy);
  constant stored* x_words = reinterpret_cast<constant stored*>(x);
  const long first = long(pos.y) * p.rows_per_chunk, last = min(first + p.rows_per_chunk, p.rows);
  float dgamma[width], dbeta[width];
  _Pragma("clang loop unroll(full)")
  for (uint c = 0; c < width; ++c) {
    dgamma[c] = 0.0f;
    dbeta[c] = 0.0f;
  }
  long at = first * words_per_row + j;
  // A run of rows loaded before any is added: one load in flight per thread
  // leaves the memory system idle (the sums keep the rows' order).
  for (long i = first; i < last; i += column_run, at += column_run * words_per_row) {
    word g[column_run], v[column_run];
    float m[column_run], r[column_run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < column_run; ++k) {
      const bool in = i + long(k) < last;
      g[k] = Held::load(in ? dy_words[at + long(k) * words_per_row] : stored(0));
      v[k] = Held::load(in ? x_words[at + long(k) * words_per_row] : stored(0));
      m[k] = in ? mean[i + k] : 0.0f;
      r[k] = in ? rstd[i + k] : 0.0f;
    }
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < column_run; ++k) {
      if (i + long(k) < last) {
        _Pragma("clang loop unroll(full)")
        for (uint c = 0; c < width; ++c) {
          const float gradient = Held::element(g[k], c);
          dgamma[c] += gradient * ((Held::element(v[k], c) - m[k]) * r[k]);
          dbeta[c] += gradient;
        }
      }
    }
  }
  _Pragma("clang loop unroll(full)")
  for (uint c = 0; c < width; ++c) {
    const long slot = (long(pos.y) * p.columns + j * long(width) + long(c)) * 2;
    partials[slot] = dgamma[c];
    partials[slot + 1] = dbeta[c];
  }
}

// Host names: layer_norm_backward_params_partials_reduce_T_T, and for half
// and bfloat layer_norm_backward_param_pairs_partials_reduce_T_T.
template <typename Held, typename T>
kernel void layer_norm_backward_params_partials(
    device float* partials [[buffer(0)]],
    constant T* dy [[buffer(1)]],
    constant T* x [[buffer(2)]],
    constant float* mean [[buffer(3)]],
    constant float* rstd [[buffer(4)]],
    constant mps_ops::layer_norm_backward_params& p [[buffer(5)]],
    uint2 pos [[thread_position_in_grid]]) {
  parameter_partials<Held>(partials, dy, x, mean, rstd, p, pos);
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

#define LAYER_NORM_INSTANTIATE(KERNEL, NAME, HELD, T) \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(NAME, reduce, T, T), KERNEL, HELD<T>, T)
MPS_OPS_FOR_FLOATING(LAYER_NORM_INSTANTIATE, layer_norm_backward, layer_norm_backward, mps_ops::single_elements)
LAYER_NORM_INSTANTIATE(layer_norm_backward, layer_norm_backward_pairs, mps_ops::element_pairs, half)
LAYER_NORM_INSTANTIATE(layer_norm_backward, layer_norm_backward_pairs, mps_ops::element_pairs, bfloat)
MPS_OPS_FOR_FLOATING(LAYER_NORM_INSTANTIATE, layer_norm_backward_params_partials, layer_norm_backward_params_partials,
                     mps_ops::single_elements)
LAYER_NORM_INSTANTIATE(layer_norm_backward_params_partials, layer_norm_backward_param_pairs_partials,
                       mps_ops::element_pairs, half)
LAYER_NORM_INSTANTIATE(layer_norm_backward_params_partials, layer_norm_backward_param_pairs_partials,
                       mps_ops::element_pairs, bfloat)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, layer_norm_backward_params_merge, reduce)
