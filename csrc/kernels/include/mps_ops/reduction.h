// Threadgroup reductions: one threadgroup per output slice. Each thread folds
// the elements tid, tid + group_size, ... of its slice into a state, SIMD
// groups merge their states with butterfly shuffles, and the first SIMD group
// merges the SIMD groups' partials from threadgroup memory.
//
// A reducer R describes the state:
//   using state = ...;                       a plain struct or scalar
//   static state identity();                 merged with anything, changes nothing
//   static state fold(state, opmath value);  one more element
//   static state merge(state, state);        two partial states (a before b)
//   static state shuffle_xor(state, ushort); each field through shuffle_xor below
// and, for reduce_one / reduce_two, its parameters (no_params if none) and
//   static opmath_t<Out> finish(state, constant params&);          reduce_one
//   static void finish(state, constant params&, device Out&, device Out&);  reduce_two
#pragma once
#include <metal_stdlib>

#include <mps_ops/instantiate.h>
#include <mps_ops/no_params.h>
#include <mps_ops/reduction_layout.h>
#include <mps_ops/types.h>

namespace mps_ops {

// The value a reducer finished with, to store as Out: a reducer computes in
// the opmath type of the output (float for half and bfloat) and the kernel
// rounds once on store. Any other result type is an instantiation mistake.
template <typename Out, typename Result>
inline Out reducer_result(Result value) {
  static_assert(metal::is_same_v<Result, opmath_t<Out>>,
                "the reducer's result type is not the opmath type of the output its instantiation names");
  return static_cast<Out>(value);
}

// Element offset of the first element of output slice `slice`.
inline long slice_offset(constant reduction_layout& layout, long slice) {
  long offset = 0;
  for (int d = 0; d < layout.outer_ndim; ++d) {
    offset += (slice % layout.outer_sizes[d]) * layout.outer_strides[d];
    slice /= layout.outer_sizes[d];
  }
  return offset;
}

// Element offset of the i-th reduced element from its slice's start.
inline long reduced_offset(constant reduction_layout& layout, long i) {
  long offset = 0;
  for (int d = 0; d < layout.inner_ndim; ++d) {
    offset += (i % layout.inner_sizes[d]) * layout.inner_strides[d];
    i /= layout.inner_sizes[d];
  }
  return offset;
}

// Metal's simd_shuffle_xor takes 32-bit-or-narrower scalars: 64-bit values go
// through as two words, bool as a uchar.
template <typename T>
inline T shuffle_xor(T value, ushort mask) {
  return metal::simd_shuffle_xor(value, mask);
}
template <>
inline long shuffle_xor(long value, ushort mask) {
  return metal::as_type<long>(metal::simd_shuffle_xor(metal::as_type<uint2>(value), mask));
}
template <>
inline bool shuffle_xor(bool value, ushort mask) {
  return bool(metal::simd_shuffle_xor(uchar(value), mask));
}

// NaN-propagating comparisons: a NaN operand wins, as on the CPU.
template <typename T>
inline T nan_min(T a, T b) {
  return (a < b || a != a) ? a : b;
}
template <typename T>
inline T nan_max(T a, T b) {
  return (a > b || a != a) ? a : b;
}

// float reducers for kernels that fold their own values and only merge
// through merge_threadgroup (pdist, the losses, softmax, embedding_renorm).
struct float_sum {
  using state = float;
  static state identity() { return 0.0f; }
  static state merge(state a, state b) { return a + b; }
  static state shuffle_xor(state s, ushort mask) { return mps_ops::shuffle_xor(s, mask); }
};

struct float_max {
  using state = float;
  static state identity() { return -metal::numeric_limits<float>::infinity(); }
  static state merge(state a, state b) { return nan_max(a, b); }
  static state shuffle_xor(state s, ushort mask) { return mps_ops::shuffle_xor(s, mask); }
};

struct float_min {
  using state = float;
  static state identity() { return metal::numeric_limits<float>::infinity(); }
  static state merge(state a, state b) { return nan_min(a, b); }
  static state shuffle_xor(state s, ushort mask) { return mps_ops::shuffle_xor(s, mask); }
};

// Where a thread sits in its threadgroup, as the merge needs it.
struct group_position {
  uint index;         // thread_index_in_threadgroup
  uint size;          // threads in the threadgroup (a multiple of the SIMD width)
  uint lane;          // thread_index_in_simdgroup
  uint simd_group;    // simdgroup_index_in_threadgroup
  uint simd_size;     // threads_per_simdgroup
};

template <typename R, typename In>
inline typename R::state fold_slice(
    constant In* in,
    constant reduction_layout& layout,
    long slice,
    thread const group_position& at) {
  typename R::state state = R::identity();
  const long start = slice_offset(layout, slice);
  for (long i = at.index; i < layout.inner_numel; i += at.size) {
    state = R::fold(state, static_cast<opmath_t<In>>(in[start + reduced_offset(layout, i)]));
  }
  return state;
}

template <typename R>
inline typename R::state merge_simd_group(typename R::state state, uint simd_size) {
  for (ushort mask = ushort(simd_size / 2); mask > 0; mask >>= 1) {
    state = R::merge(state, R::shuffle_xor(state, mask));
  }
  return state;
}

// The whole threadgroup's state, complete in thread 0. partials holds one
// state per SIMD group (32: Metal's 1024-thread limit over the SIMD width).
template <typename R>
inline typename R::state merge_threadgroup(
    typename R::state state,
    threadgroup typename R::state* partials,
    thread const group_position& at) {
  state = merge_simd_group<R>(state, at.simd_size);
  const uint n_simd_groups = (at.size + at.simd_size - 1) / at.simd_size;
  if (n_simd_groups == 1) {
    return state;
  }
  if (at.lane == 0) {
    partials[at.simd_group] = state;
  }
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  if (at.simd_group == 0) {
    state = R::identity();
    if (at.lane < n_simd_groups) {
      state = partials[at.lane];
    }
    state = merge_simd_group<R>(state, at.simd_size);
  }
  return state;
}


// The state of one whole slice, complete in thread 0.
template <typename R, typename In>
inline typename R::state reduce_slice(
    constant In* in,
    constant reduction_layout& layout,
    long slice,
    threadgroup typename R::state* partials,
    thread const group_position& at) {
  return merge_threadgroup<R>(fold_slice<R>(in, layout, slice, at), partials, at);
}

// Reductions with one output per slice (max, min, std, var): out[slice] =
// R::finish(state, params).
template <typename R, typename Out, typename In>
kernel void reduce_one(
    device Out* out [[buffer(0)]],
    constant In* in [[buffer(1)]],
    constant reduction_layout& layout [[buffer(2)]],
    constant typename R::params& params [[buffer(3)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup typename R::state partials[32];
  group_position at{index, group_size.x, lane, simd_group, simd_size};
  const long slice = long(group.y);
  const typename R::state state = reduce_slice<R>(in, layout, slice, partials, at);
  if (index == 0) {
    out[slice] = reducer_result<Out>(R::finish(state, params));
  }
}

// Reductions with two outputs per slice (aminmax): R::finish(state, params,
// out0[slice], out1[slice]).
template <typename R, typename Out, typename In>
kernel void reduce_two(
    device Out* out0 [[buffer(0)]],
    device Out* out1 [[buffer(1)]],
    constant In* in [[buffer(2)]],
    constant reduction_layout& layout [[buffer(3)]],
    constant typename R::params& params [[buffer(4)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup typename R::state partials[32];
  group_position at{index, group_size.x, lane, simd_group, simd_size};
  const long slice = long(group.y);
  const typename R::state state = reduce_slice<R>(in, layout, slice, partials, at);
  if (index == 0) {
    R::finish(state, params, out0[slice], out1[slice]);
  }
}

}  // namespace mps_ops

// Host names `<op>_reduce_<out>_<in>`, the one grammar's reduce variant.
// The _SAME_TYPE forms take one type for both, the shape dtype sets apply:
//   MPS_OPS_FOR_FLOATING(REGISTER_REDUCE_ONE_OP_SAME_TYPE, var)
#define REGISTER_REDUCE_ONE_OP(OP, OUT, IN)                                                    \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, reduce, OUT, IN), mps_ops::reduce_one,             \
                      OP##_reducer<IN>, OUT, IN)
#define REGISTER_REDUCE_ONE_OP_SAME_TYPE(OP, T) REGISTER_REDUCE_ONE_OP(OP, T, T)
#define REGISTER_REDUCE_TWO_OP(OP, OUT, IN)                                                    \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, reduce, OUT, IN), mps_ops::reduce_two,             \
                      OP##_reducer<IN>, OUT, IN)
#define REGISTER_REDUCE_TWO_OP_SAME_TYPE(OP, T) REGISTER_REDUCE_TWO_OP(OP, T, T)
