// _softmax and _log_softmax along one dim, in float, rounded once to T:
//   softmax      out = exp(x - max) * (1 / sum exp(x - max))
//   log_softmax  out = (x - max) - log(sum exp(x - max))
// as the CPU computes them (max first, so no exp overflows). float rows of
// up to 8 x 256 elements are read once: the host gives them enough threads
// (SliceMapping::register_rows) that each keeps its elements in registers
// between the max/sum and the write (shape_limits.h says why not half and
// bfloat ones). Longer rows take two reads: the max
// and sum from one pass (an online pair: a partial sum is rescaled when a
// larger max arrives, once per run of loads, not per element), then the
// write, reading the row again from the cache, instead of the three reads
// of max, sum and write. A row that is all -inf is NaN
// throughout, as on the CPU (exp(-inf - -inf)); NaN anywhere makes its row
// NaN. Rows as in softmax_backward.metal (SliceMapping::rows: consecutive
// threads per row, several rows per threadgroup, the row's pair reaching
// all of its threads). On Apple GPUs this replaces an MPSGraph op per
// softmax in every forward pass (torch 2.9 to 2.14).
#include <metal_stdlib>
#include <mps_ops/reduction.h>
#include <mps_ops/row_walk.h>
using namespace metal;

namespace {

// Loads in flight together per thread, before the run's max is folded in.
constant constexpr uint run = 4;

// A partial row: its max and the sum of exp(x - max) over its elements.
struct max_and_sum {
  float max;
  float sum;
};

// sum rescaled to a max m >= its own: unchanged where the max is m (so -inf
// stays 0 instead of exp(-inf - -inf)), NaN where m is NaN.
inline float sum_at(max_and_sum s, float m) {
  return s.max == m ? s.sum : s.sum * exp(s.max - m);
}

struct online_softmax {
  using state = max_and_sum;
  static state identity() { return state{-numeric_limits<float>::infinity(), 0.0f}; }
  static state merge(state a, state b) {
    const float m = mps_ops::nan_max(a.max, b.max);
    return state{m, sum_at(a, m) + sum_at(b, m)};
  }
  static state shuffle_xor(state s, ushort mask) {
    return state{mps_ops::shuffle_xor(s.max, mask), mps_ops::shuffle_xor(s.sum, mask)};
  }
};

// Each rule's per-row factor from the row's sum, then each element's value.
struct softmax_rule {
  static float factor(float sum) { return 1.0f / sum; }
  static float value(float x, float max, float inverse_sum) { return exp(x - max) * inverse_sum; }
};

struct log_softmax_rule {
  static float factor(float sum) { return log(sum); }
  static float value(float x, float max, float log_sum) { return (x - max) - log_sum; }
};

// v[k] = the k-th element of the thread's run from `first`, -inf past the
// row's end.
template <typename T>
inline void load_run(thread float* v, constant T* in, thread const mps_ops::row_walk& row, uint first, uint step) {
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < run; ++k) {
    const uint i = first + k * step;
    v[k] = i < row.length ? float(in[row.offset(i)]) : -numeric_limits<float>::infinity();
  }
}

template <typename Rule, typename T>
inline void softmax_rows(device T* out, constant T* in, constant mps_ops::reduction_layout& layout,
                         threadgroup max_and_sum* partials, uint group, thread const mps_ops::group_position& at) {
  const mps_ops::slice_thread t = mps_ops::place_thread(layout, group, at);
  const mps_ops::row_walk row = mps_ops::walk_row(layout, t);
  constant T* row_in = in + row.start;
  device T* row_out = out + row.start;
  const uint n = row.length, step = t.step;

  // A row the host gave enough threads (SliceMapping::register_rows): each
  // thread loads its at most `held` elements once, keeps them in registers
  // through the merge and writes from them: one read of the row.
  // The test is the same for every thread of the group (the row length of
  // the layout, not this thread's, which is 0 past the last row): both
  // branches merge through barriers, which every thread must reach alike.
  constexpr uint held = mps_ops::register_row_elements;
  if (uint(layout.inner_numel) <= held * step) {
    float v[held];
    float m = -numeric_limits<float>::infinity();
    // Addresses by stepping one pointer (64-bit offsets per element cost
    // registers that the held values need).
    const long jump = long(step) * row.stride;
    constant T* at_k = row_in + row.offset(t.first);
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < held; ++k, at_k += jump) {
      v[k] = t.first + k * step < n ? float(*at_k) : -numeric_limits<float>::infinity();
      m = mps_ops::nan_max(m, v[k]);
    }
    float sum = 0.0f;
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < held; ++k) {
      sum += m == -numeric_limits<float>::infinity() ? 0.0f : exp(v[k] - m);
    }
    const max_and_sum total =
        mps_ops::merge_consecutive_to_all<online_softmax>(max_and_sum{m, sum}, partials, at, step);
    const float factor = Rule::factor(total.sum);
    device T* out_k = row_out + row.offset(t.first);
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < held; ++k, out_k += jump) {
      if (t.first + k * step < n) {
        *out_k = static_cast<T>(Rule::value(v[k], total.max, factor));
      }
    }
    return;
  }

  // Longer rows: the online pair over runs of loads, then the row read again.
  max_and_sum state = online_softmax::identity();
  for (uint first = t.first; first < n; first += run * step) {
    float v[run];
    load_run(v, row_in, row, first, step);
    float m = state.max;
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      m = mps_ops::nan_max(m, v[k]);
    }
    // Where m is -inf every term is 0 (past the end, or -inf inputs).
    float sum = sum_at(state, m);
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      sum += m == -numeric_limits<float>::infinity() ? 0.0f : exp(v[k] - m);
    }
    state = max_and_sum{m, sum};
  }
  const max_and_sum total = mps_ops::merge_consecutive_to_all<online_softmax>(state, partials, at, step);
  const float factor = Rule::factor(total.sum);

  for (uint first = t.first; first < n; first += run * step) {
    float v[run];
    load_run(v, row_in, row, first, step);
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      const uint i = first + k * step;
      if (i < n) {
        row_out[row.offset(i)] = static_cast<T>(Rule::value(v[k], total.max, factor));
      }
    }
  }
}

}  // namespace

template <typename T>
kernel void softmax(
    device T* out [[buffer(0)]],
    constant T* in [[buffer(1)]],
    constant mps_ops::reduction_layout& layout [[buffer(2)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup max_and_sum partials[32];
  const mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  softmax_rows<softmax_rule>(out, in, layout, partials, group.y, at);
}

template <typename T>
kernel void log_softmax(
    device T* out [[buffer(0)]],
    constant T* in [[buffer(1)]],
    constant mps_ops::reduction_layout& layout [[buffer(2)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup max_and_sum partials[32];
  const mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  softmax_rows<log_softmax_rule>(out, in, layout, partials, group.y, at);
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, softmax, reduce)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, log_softmax, reduce)
