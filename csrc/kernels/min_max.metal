// Whole-slice min, max and aminmax (max.unary_out, min.unary_out, _aminmax,
// _aminmax.dim) over output slices (reduction.h). A NaN anywhere in a slice
// is its min and its max, as on the CPU.
#include <metal_stdlib>
#include <mps_ops/element_pairs.h>
#include <mps_ops/reduction.h>
using namespace metal;

namespace {

// Bounds that lose to every element: infinities for float (half and bfloat
// reduce in float), so that a slice of infinities still reduces to itself.
template <typename T>
T greatest() {
  return numeric_limits<T>::max();
}
template <>
float greatest<float>() {
  return numeric_limits<float>::infinity();
}
template <typename T>
T least() {
  return numeric_limits<T>::lowest();
}
template <>
float least<float>() {
  return -numeric_limits<float>::infinity();
}

}  // namespace

template <typename In>
struct max_reducer {
  using state = mps_ops::opmath_t<In>;
  using params = mps_ops::no_params;
  static state identity() { return least<state>(); }
  static state fold(state s, state v) { return mps_ops::nan_max(s, v); }
  static state merge(state a, state b) { return mps_ops::nan_max(a, b); }
  static state shuffle_xor(state s, ushort mask) { return mps_ops::shuffle_xor(s, mask); }
  static state finish(state s, constant params&) { return s; }
};

template <typename In>
struct min_reducer {
  using state = mps_ops::opmath_t<In>;
  using params = mps_ops::no_params;
  static state identity() { return greatest<state>(); }
  static state fold(state s, state v) { return mps_ops::nan_min(s, v); }
  static state merge(state a, state b) { return mps_ops::nan_min(a, b); }
  static state shuffle_xor(state s, ushort mask) { return mps_ops::shuffle_xor(s, mask); }
  static state finish(state s, constant params&) { return s; }
};

template <typename In>
struct aminmax_reducer {
  using T = mps_ops::opmath_t<In>;
  struct state {
    T lo;
    T hi;
  };
  using params = mps_ops::no_params;
  static state identity() { return state{greatest<T>(), least<T>()}; }
  static state fold(state s, T v) { return state{mps_ops::nan_min(s.lo, v), mps_ops::nan_max(s.hi, v)}; }
  static state merge(state a, state b) {
    return state{mps_ops::nan_min(a.lo, b.lo), mps_ops::nan_max(a.hi, b.hi)};
  }
  static state shuffle_xor(state s, ushort mask) {
    return state{mps_ops::shuffle_xor(s.lo, mask), mps_ops::shuffle_xor(s.hi, mask)};
  }
  template <typename Out>
  static void finish(state s, constant params&, device Out& lo, device Out& hi) {
    lo = static_cast<Out>(s.lo);
    hi = static_cast<Out>(s.hi);
  }
};

// Two halves or bfloat16 per int word (the host binds contiguous slices of
// an even length so, min_max.mm): each word folds its low element, then
// its high one, into the element reducer's state. Half the loads for the
// same bytes (on an H200 the one-element half kernels were bound by their
// 2-byte loads; an Apple GPU's loads likewise cost per instruction).
template <typename T, typename Elements>
struct element_pairs_of : Elements {
  using typename Elements::state;
  using pair = mps_ops::element_pairs<T>;
  static state fold(state s, int w) {
    return Elements::fold(Elements::fold(s, pair::element(uint(w), 0)), pair::element(uint(w), 1));
  }
};

template <typename In>
struct max_half_pairs_reducer : element_pairs_of<half, max_reducer<half>> {};
template <typename In>
struct max_bfloat_pairs_reducer : element_pairs_of<bfloat, max_reducer<bfloat>> {};
template <typename In>
struct min_half_pairs_reducer : element_pairs_of<half, min_reducer<half>> {};
template <typename In>
struct min_bfloat_pairs_reducer : element_pairs_of<bfloat, min_reducer<bfloat>> {};
// Two neighbouring columns per int word (the host views an input whose kept
// last dim is contiguous and of an even length so, and both outputs alike,
// min_max.mm): a column-mapped thread then reads two columns per load. Each
// word's low element folds into the first column's state, its high one into
// the second's, and each output word holds both columns' results (H200,
// _aminmax over the middle dim of (256, 2048, 256) half: 0.81x torch's CUDA
// kernel one column per load).
template <typename T>
struct aminmax_column_pairs {
  using columns = aminmax_reducer<T>;
  using pair = mps_ops::element_pairs<T>;
  struct state {
    typename columns::state low;
    typename columns::state high;
  };
  using params = mps_ops::no_params;
  static state identity() { return state{columns::identity(), columns::identity()}; }
  static state fold(state s, int w) {
    return state{columns::fold(s.low, pair::element(uint(w), 0)), columns::fold(s.high, pair::element(uint(w), 1))};
  }
  static state merge(state a, state b) { return state{columns::merge(a.low, b.low), columns::merge(a.high, b.high)}; }
  static state shuffle_xor(state s, ushort mask) {
    return state{columns::shuffle_xor(s.low, mask), columns::shuffle_xor(s.high, mask)};
  }
  template <typename Out>
  static void finish(state s, constant params&, device Out& lo, device Out& hi) {
    lo = as_type<Out>(pair::pair(s.low.lo, s.high.lo));
    hi = as_type<Out>(pair::pair(s.low.hi, s.high.hi));
  }
};

template <typename In>
struct aminmax_half_pairs_reducer : element_pairs_of<half, aminmax_reducer<half>> {};
template <typename In>
struct aminmax_bfloat_pairs_reducer : element_pairs_of<bfloat, aminmax_reducer<bfloat>> {};

MPS_OPS_FOR_ALL_BUT_WIDE_UNSIGNED(REGISTER_REDUCE_ONE_OP_SAME_TYPE, max)
MPS_OPS_FOR_ALL_BUT_WIDE_UNSIGNED(REGISTER_REDUCE_ONE_OP_SAME_TYPE, min)
MPS_OPS_FOR_ALL_BUT_WIDE_UNSIGNED(REGISTER_REDUCE_TWO_OP_SAME_TYPE, aminmax)
REGISTER_REDUCE_ONE_OP(max_half_pairs, half, int)
REGISTER_REDUCE_ONE_OP(max_bfloat_pairs, bfloat, int)
REGISTER_REDUCE_ONE_OP(min_half_pairs, half, int)
REGISTER_REDUCE_ONE_OP(min_bfloat_pairs, bfloat, int)
REGISTER_REDUCE_TWO_OP(aminmax_half_pairs, half, int)
REGISTER_REDUCE_TWO_OP(aminmax_bfloat_pairs, bfloat, int)
template <typename In>
struct aminmax_half_column_pairs_reducer : aminmax_column_pairs<half> {};
template <typename In>
struct aminmax_bfloat_column_pairs_reducer : aminmax_column_pairs<bfloat> {};
REGISTER_REDUCE_TWO_OP(aminmax_half_column_pairs, int, int)
REGISTER_REDUCE_TWO_OP(aminmax_bfloat_column_pairs, int, int)
