// _softmax and _log_softmax along one dim, in float, rounded once to T:
//   softmax      out = exp(x - max) * (1 / sum exp(x - max))
//   log_softmax  out = (x - max) - log(sum exp(x - max))
// as the CPU computes them (max first, so no exp overflows). Rows of up to
// 32 elements per thread of the held rows mapping (SliceMapping::held_rows:
// up to 32 x 1024) are read once: each thread keeps its elements in
// registers between the max/sum and the write; a row of up to 1024 lies within one SIMD group
// and merges by shuffles alone. Longer rows take two reads: the max
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
#include <mps_ops/element_pairs.h>
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

// Each rule's term of the row's sum from x - max, its per-row factor from
// the sum, then each element's value.
struct softmax_rule {
  static float term(float shifted) { return exp(shifted); }
  static float factor(float sum) { return 1.0f / sum; }
  static float value(float x, float max, float inverse_sum) { return exp(x - max) * inverse_sum; }
};

// log_softmax's terms meet its output only through log(sum), so they take
// Metal's fast exp (an NVIDIA GPU's is ex2.approx of x * log2(e): two
// instructions where exp's range reduction takes some eight, and on an
// H200 rows of 32768 are bound by these). Its error grows with |x - max|,
// but so does the term's smallness: the sum stays within a few float ulps,
// so log(sum) is off by some 1e-7; subnormal terms (below 2**-126 of the
// max's) may flush to 0.
struct log_softmax_rule {
  static float term(float shifted) { return fast::exp(shifted); }
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

// A held row's elements one per load (single_elements), or, for half and
// bfloat, two per 32-bit load and store (element_pairs, mps_ops/
// element_pairs.h): half the instructions for the same bytes (on NVIDIA's
// H200, rows of 32768: 0.67x -> 0.78x torch's CUDA softmax, whose loads are
// 16 bytes wide; an Apple GPU's loads likewise cost per instruction). The
// host takes the paired kernels for contiguous rows of an even length whose
// input and output are 4-byte aligned.
//
// A row of at most elements_per_row_thread elements per thread (the host's
// mapping): each thread loads its elements once and keeps them in
// registers. The row's max is merged first, then each element's exp(x - max) and their sum, as
// the CPU computes them; the write computes each value from x (softmax's
// exp(x - max) again: the same bits, and compilers keep the first one where
// registers allow). No exp(-inf - -inf) check is needed: past the row's end
// the values are -inf, whose terms are 0 below a finite max, and a row
// whose max is -inf or +inf, or that holds a NaN (max drops it, its term
// does not), sums to NaN and is NaN throughout, as on the CPU.
// Fixed_step: the threads per row where the host's mapping makes it 32 and
// the row is contiguous, so that every word's offset is a constant (0 for
// any other mapping). Each word's address steps a pointer by `jump` (one
// 64-bit add): computed as k * jump, the H200's code took some 8
// instructions per load and 12 per store on rows of 32768, and kept its
// bounds tests in a register of flags.
template <uint fixed_step, typename Rule, typename Held, typename T>
inline void held_row(device T* row_out, constant T* row_in, thread const mps_ops::row_walk& row,
                     thread const mps_ops::slice_thread& t, threadgroup float* partials,
                     thread const mps_ops::group_position& at) {
  using stored = typename Held::stored;
  using word = typename Held::word;
  constexpr uint width = Held::width(), words = mps_ops::elements_per_row_thread / width;
  const uint n = row.length / width, step = fixed_step != 0 ? fixed_step : t.step;
  const long jump = fixed_step != 0 ? long(fixed_step) : long(step) * row.stride;
  constant stored* in_k = reinterpret_cast<constant stored*>(row_in + row.offset(t.first * width));
  word held[words];
  float m = -numeric_limits<float>::infinity();
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < words; ++k) {
    held[k] = t.first + k * step < n ? Held::load(*in_k) : Held::padding();
    in_k += jump;
    _Pragma("clang loop unroll(full)")
    for (uint j = 0; j < width; ++j) {
      m = max(m, Held::element(held[k], j));
    }
  }
  m = mps_ops::merge_consecutive_to_all<mps_ops::float_max>(m, partials, at, step);
  float sum = 0.0f;
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < words; ++k) {
    _Pragma("clang loop unroll(full)")
    for (uint j = 0; j < width; ++j) {
      sum += Rule::term(Held::element(held[k], j) - m);
    }
  }
  sum = mps_ops::merge_consecutive_to_all<mps_ops::float_sum>(sum, partials, at, step);
  const float factor = Rule::factor(sum);
  device stored* out_k = reinterpret_cast<device stored*>(row_out + row.offset(t.first * width));
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < words; ++k) {
    if (t.first + k * step < n) {
      float values[width];
      _Pragma("clang loop unroll(full)")
      for (uint j = 0; j < width; ++j) {
        values[j] = Rule::value(Held::element(held[k], j), m, factor);
      }
      *out_k = Held::store(values);
    }
    out_k += jump;
  }
}

// Held: how a held row's thread loads its elements (single_elements, or
// element_pairs in the paired kernels).
template <typename Rule, typename Held, typename T>
inline void softmax_rows(device T* out, constant T* in, constant mps_ops::reduction_layout& layout,
                         threadgroup max_and_sum* partials, threadgroup float* float_partials, uint group,
                         thread const mps_ops::group_position& at) {
  const mps_ops::slice_thread t = mps_ops::place_thread(layout, group, at);
  const mps_ops::row_walk row = mps_ops::walk_row(layout, t);
  constant T* row_in = in + row.start;
  device T* row_out = out + row.start;
  const uint n = row.length, step = t.step;

  // A row of up to elements_per_row_thread per thread (the rows mapping
  // gives that wherever the row fits a group): held in registers, read once.
  // The test is the same for every thread of the group (the layout's row
  // length, not this thread's, which is 0 past the last row): the merge's
  // barriers, where a row spans several SIMD groups, must be reached alike.
  constexpr uint held = mps_ops::elements_per_row_thread;
  if (uint(layout.inner_numel) <= held * step) {
    // (The layout's stride, not the row's: 0 past the last row.)
    if (step == 32 && layout.inner_ndim == 1 && layout.inner_strides[0] == 1) {
      held_row<32, Rule, Held>(row_out, row_in, row, t, float_partials, at);
    } else {
      held_row<0, Rule, Held>(row_out, row_in, row, t, float_partials, at);
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
      sum += m == -numeric_limits<float>::infinity() ? 0.0f : Rule::term(v[k] - m);
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

// Host names: softmax_reduce_T_T, log_softmax_reduce_T_T, and for half and
// bfloat the paired rows' softmax_pairs_reduce_T_T, log_softmax_pairs_....
template <typename Rule, typename Held, typename T>
kernel void softmax_kernel(
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
  threadgroup float float_partials[32];
  const mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  softmax_rows<Rule, Held>(out, in, layout, partials, float_partials, group.y, at);
}

#define SOFTMAX_INSTANTIATE(NAME, RULE, HELD, T) \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(NAME, reduce, T, T), softmax_kernel, RULE, HELD<T>, T)

MPS_OPS_FOR_FLOATING(SOFTMAX_INSTANTIATE, softmax, softmax_rule, mps_ops::single_elements)
MPS_OPS_FOR_FLOATING(SOFTMAX_INSTANTIATE, log_softmax, log_softmax_rule, mps_ops::single_elements)
SOFTMAX_INSTANTIATE(softmax_pairs, softmax_rule, mps_ops::element_pairs, half)
SOFTMAX_INSTANTIATE(softmax_pairs, softmax_rule, mps_ops::element_pairs, bfloat)
SOFTMAX_INSTANTIATE(log_softmax_pairs, log_softmax_rule, mps_ops::element_pairs, half)
SOFTMAX_INSTANTIATE(log_softmax_pairs, log_softmax_rule, mps_ops::element_pairs, bfloat)
