// Threadgroup reductions. The host (csrc/runtime/reduction.cpp) maps threads
// to output slices one of two ways (reduction_layout.h says which):
//   rows     W consecutive threads share a slice, W a power of two: 8 or
//            more in one SIMD group for short slices, so a group holds
//            several slices and merges them by shuffles alone, or up to the whole
//            group for long ones, whose SIMD groups' partials then meet in
//            threadgroup memory. Thread t of a slice folds its elements
//            t, t + W, ..., so neighbouring threads read neighbouring elements
//            where the reduced dim is the innermost.
//   columns  neighbouring threads take neighbouring slices (one SIMD group
//            reads 32 neighbouring outputs' elements at once where the reduced
//            dim is not the innermost), a few rows of threads deal out each
//            slice's elements, and the rows' states meet in threadgroup memory.
// Long slices with few outputs split over several groups: each reduces one
// chunk of the slice (grid z) and stores its state; a second kernel
// (reduce_one_merge / reduce_two_merge) merges each slice's chunk states in
// chunk order and finishes them (reduction.cpp's choose_split says when).
// Element offsets come without division where the reduced dims collapse to
// one (the common case: the offset steps by a constant), indices are
// divided in 32 bits (a GPU does 64-bit division in software, tens of
// instructions and registers), and offsets are 32-bit where the host found
// every one below 2**31.
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
#include <mps_ops/shape_limits.h>
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

// Element offset (type I: uint where the host found every offset below
// 2**31, else ulong) of the first element of output slice `slice`. Slice
// numbers and dim sizes stay below 2**32 (the host refuses more slices), so
// the divisions are 32-bit ones.
template <typename I>
inline I slice_offset(constant reduction_layout& layout, uint slice) {
  I offset = 0;
  for (int d = 0; d < layout.outer_ndim; ++d) {
    const uint size = uint(layout.outer_sizes[d]);
    offset += I(slice % size) * I(layout.outer_strides[d]);
    slice /= size;
  }
  return offset;
}

// Element offset of the i-th reduced element from its slice's start: one
// multiplication where the reduced dims collapsed to one, else a 32-bit
// division per dim (the host keeps such slices below 2**32 elements).
template <typename I>
inline I reduced_offset(constant reduction_layout& layout, I i) {
  if (layout.inner_ndim == 1) {
    return i * I(layout.inner_strides[0]);
  }
  uint rest = uint(i);
  I offset = 0;
  for (int d = 0; d < layout.inner_ndim; ++d) {
    const uint size = uint(layout.inner_sizes[d]);
    offset += I(rest % size) * I(layout.inner_strides[d]);
    rest /= size;
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
inline ulong shuffle_xor(ulong value, ushort mask) {
  return metal::as_type<ulong>(metal::simd_shuffle_xor(metal::as_type<uint2>(value), mask));
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
// through merge_threadgroup (pdist, the losses, softmax, embedding_renorm),
// and the merge half of reducers that add (weight_norm's).
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

// Threadgroup memory for the states that meet there: a row-mapped group
// leaves one per SIMD group (at most 1024 / 32), a column-mapped one
// (rows - 1) * columns < max_column_group.
enum { partial_states = max_column_group };

// Which slice a thread works on, and which of its elements: first, first +
// step, ... (reduction_layout says how the host mapped threads to slices).
struct slice_thread {
  ulong slice;
  uint first;
  uint step;
  bool active;  // false past the last slice: folds nothing, still merges
};

// The number of output slices: below 2**32 (the host refuses more).
inline uint slice_count(constant reduction_layout& layout) {
  uint count = 1;
  for (int d = 0; d < layout.outer_ndim; ++d) {
    count *= uint(layout.outer_sizes[d]);
  }
  return count;
}

inline slice_thread place_thread(constant reduction_layout& layout, uint group, thread const group_position& at) {
  const uint share = uint(layout.threads_per_slice);
  const ulong slices = ulong(slice_count(layout));
  if (layout.columns == 0) {
    const ulong slice = ulong(group) * (at.size / share) + at.index / share;
    return slice_thread{slice, at.index % share, share, slice < slices};
  }
  const uint columns = uint(layout.columns);
  const ulong slice = ulong(group) * columns + at.index % columns;
  return slice_thread{slice, at.index / columns, share, slice < slices};
}

// Whether this thread holds its slice's merged state (after merge_slice).
inline bool finishes_slice(thread const slice_thread& t) {
  return t.active && t.first == 0;
}

// How a run of loaded values folds into a state. A reducer folds them one
// at a time, in order (bit-identical to folding each as it is loaded),
// unless its fold costs more than its merge (Welford's: a division per
// value); such a reducer declares
//   using runs = runs_merged;
//   template <uint run> static state of_run(thread const opmath* values);
// of_run gives the state of the run alone, merged in after state: one
// division per run, and runs of at least 8 (4 floats left var at 0.74x
// torch's CUDA kernel on an H100, its divisions the cost).
struct runs_folded {};
struct runs_merged {};
template <typename R, typename = void>
struct runs_of {
  using type = runs_folded;
};
template <typename R>
struct runs_of<R, typename void_if_type<typename R::runs>::type> {
  using type = typename R::runs;
};

// How each kind folds a run, and its loads per run (issued before the folds
// that use them): elements_per_thread of the input type, as the
// element-wise kernels keep in flight, or at least 8 where runs merge.
// (Kinds are template arguments, never values: a tag passed by value trips
// tools/check_address_spaces.py's OpenCL rendering of MSL.)
template <typename Runs>
struct run_folding;
template <>
struct run_folding<runs_folded> {
  static constexpr uint length(uint in_size) { return elements_per_thread(in_size); }
  template <typename R, uint run, typename V>
  static typename R::state fold(typename R::state state, thread const V* values) {
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      state = R::fold(state, values[k]);
    }
    return state;
  }
};
template <>
struct run_folding<runs_merged> {
  static constexpr uint length(uint in_size) {
    return elements_per_thread(in_size) > 8 ? elements_per_thread(in_size) : 8;
  }
  template <typename R, uint run, typename V>
  static typename R::state fold(typename R::state state, thread const V* values) {
    return R::merge(state, R::template of_run<run>(values));
  }
};

// A thread's walk over its elements' offsets, one step (the thread's stride
// through the slice's elements) at a time, without division.
// One reduced dim: the offset steps by a constant.
template <typename I>
struct line_walk {
  I offset;
  I jump;
};
template <typename I>
inline line_walk<I> next(line_walk<I> walk) {
  return line_walk<I>{walk.offset + walk.jump, walk.jump};
}
// Two reduced dims (batch_norm's batch and spatial dims): element
// i = q * size0 + r lies at q * stride1 + r * stride0; a step adds its own
// (q, r) and carries r past size0 into q. 32-bit coordinates: the host
// keeps slices of several dims below 2**32 elements.
template <typename I>
struct plane_walk {
  I offset;
  I jump;  // a step's (q, r) in offset
  I wrap;  // r past size0: one more q, size0 fewer r (modulo I where negative)
  uint r;
  uint step_r;
  uint size0;
};
template <typename I>
inline plane_walk<I> next(plane_walk<I> walk) {
  const uint r = walk.r + walk.step_r;
  const bool carry = r >= walk.size0;
  return plane_walk<I>{walk.offset + walk.jump + (carry ? walk.wrap : I(0)), walk.jump, walk.wrap,
                       carry ? r - walk.size0 : r, walk.step_r, walk.size0};
}

// What a reduction reads at an element offset: one input's element in its
// opmath type (one_input), or for a reducer over two inputs of one layout a
// value of its own (batch_norm.metal's backward pairs the gradient with the
// centred input). A source S gives
//   using value = ...;                      what the reducer folds
//   static constexpr uint element_bytes();  bytes one element loads (run length)
//   S::value load(S, I offset);             a free function found by overload
// (free functions and plain fields: tools/check_address_spaces.py's OpenCL
// rendering of MSL takes no member functions on thread objects).
template <typename In>
struct one_input {
  using value = opmath_t<In>;
  static constexpr uint element_bytes() { return sizeof(In); }
  constant In* in;
};
template <typename In, typename I>
inline opmath_t<In> load(one_input<In> source, I offset) {
  return static_cast<opmath_t<In>>(source.in[offset]);
}

// Slices read relative to an origin, their first element: a reducer whose
// float arithmetic rounds at the values' magnitude (Welford's mean of values
// near 1e4 rounds at 1e-3, so a variance of 1 came out 1e-3 off) declares
//   using origin = origin_first_element;
//   static state moved_by(state s, float origin);  // the same moments about 0
// and folds each element minus its slice's first element: exact beside
// values of the same magnitude, so its arithmetic rounds at the spread's
// scale (the CPU accumulates in double instead). Only where the slice looks
// offset, its first two elements closer to each other than 1/64 of the
// first's magnitude (an offset of 100 spreads or more as good as always; the
// error it mends grows with the square of that ratio, 4e-6 at 1e3): about a
// first element far from a mean of its own size (values centred near 0) the
// mean would round at that element's magnitude instead. The origin is 0
// otherwise, where the first element is not finite or above 2**100 (so no
// finite value minus it overflows, and non-finite values keep their class),
// and for empty slices. Every thread of a slice, and every chunk of a split
// one, finds the same origin; split slices store it beside their chunk
// states for the merge pass. Other reducers read one_input, unshifted, and
// store bare states. (batch_norm's statistics alone declare it: on var/std
// it cost 7-38% on the H200, docs/design.md.)
template <typename In>
struct shifted_input {
  using value = float;
  static constexpr uint element_bytes() { return sizeof(In); }
  constant In* in;
  float origin;
};
template <typename In, typename I>
inline float load(shifted_input<In> source, I offset) {
  return static_cast<float>(source.in[offset]) - source.origin;
}

// Folds the elements i, i + step, ... before `end` at the offsets `walk`
// gives from the source. A run of loads is issued before the folds that use
// them: a fold waits for its load, and one load per dependent fold keeps one
// load in flight per thread where the memory system needs several (on an
// Apple GPU too). Welford's reducers merge each run's own moments
// (run_folding): folded one at a time, the run's chain of divisions cost more
// than its loads in flight gained (H100: var 946 -> 703 GB/s).
template <typename R, typename I, typename Source, typename Walk>
inline typename R::state fold_walk(typename R::state state, Source source, Walk walk, I i, I end, uint step) {
  using folding = run_folding<typename runs_of<R>::type>;
  constexpr uint run = folding::length(Source::element_bytes());
  for (; i + (run - 1) * I(step) < end; i += run * I(step)) {
    typename Source::value values[run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      values[k] = load(source, walk.offset);
      walk = next(walk);
    }
    state = folding::template fold<R, run, typename Source::value>(state, values);
  }
  for (; i < end; i += step) {
    state = R::fold(state, load(source, walk.offset));
    walk = next(walk);
  }
  return state;
}

// Folds the elements first, first + step, ... before `end` of the slice
// starting at `start` into state. I is the offset type (uint or ulong, as
// slice_offset).
template <typename R, typename I, typename Source>
inline typename R::state fold_source(
    typename R::state state,
    Source source,
    constant reduction_layout& layout,
    I start,
    I first,
    I end,
    uint step) {
  if (layout.inner_ndim <= 1) {
    // One reduced dim (or none, one element): the count may pass 2**32 (a
    // long expanded input).
    const I stride = I(layout.inner_strides[0]);
    return fold_walk<R>(state, source, line_walk<I>{start + first * stride, I(step) * stride}, first, end, step);
  }
  if (layout.inner_ndim == 2) {
    if (uint(first) >= uint(end)) {
      return state;  // nothing to fold; size0 may be 0 (an empty slice)
    }
    const uint size0 = uint(layout.inner_sizes[0]);
    const I stride0 = I(layout.inner_strides[0]), stride1 = I(layout.inner_strides[1]);
    const uint r = uint(first) % size0, step_r = step % size0;
    return fold_walk<R>(state, source,
                        plane_walk<I>{start + I(uint(first) / size0) * stride1 + I(r) * stride0,
                                      I(step / size0) * stride1 + I(step_r) * stride0, stride1 - I(size0) * stride0,
                                      r, step_r, size0},
                        uint(first), uint(end), step);
  }
  // Three or more reduced dims: a division per dim and element.
  for (uint i = uint(first); i < uint(end); i += step) {
    state = R::fold(state, load(source, start + reduced_offset(layout, I(i))));
  }
  return state;
}

// The same over one input.
template <typename R, typename I, typename In>
inline typename R::state fold_elements(
    typename R::state state,
    constant In* in,
    constant reduction_layout& layout,
    I start,
    I first,
    I end,
    uint step) {
  return fold_source<R>(state, one_input<In>{in}, layout, start, first, end, step);
}

// The chunks a split slice has (reduction_layout's chunk_shift > 0).
inline uint chunk_count(constant reduction_layout& layout) {
  const ulong length = ulong(1) << layout.chunk_shift;
  return uint((ulong(layout.inner_numel) + length - 1) >> layout.chunk_shift);
}

// The reduced elements [begin, end) that the groups at grid z = chunk fold:
// the whole slice unless the host split it.
struct element_range {
  ulong begin;
  ulong end;
};
inline element_range chunk_elements(constant reduction_layout& layout, uint chunk) {
  const ulong n = ulong(layout.inner_numel);
  if (layout.chunk_shift == 0) {
    return element_range{0, n};
  }
  const ulong begin = ulong(chunk) << layout.chunk_shift;
  const ulong end = begin + (ulong(1) << layout.chunk_shift);
  return element_range{begin, end < n ? end : n};
}

template <typename R>
inline typename R::state merge_simd_group(typename R::state state, uint width) {
  for (ushort mask = ushort(width / 2); mask > 0; mask >>= 1) {
    state = R::merge(state, R::shuffle_xor(state, mask));
  }
  return state;
}

// The first step of the merges of `share` consecutive threads per slice
// below: each SIMD group's states merged by shuffles, complete in every lane
// of it; where a slice spans several SIMD groups, each group's state left in
// partials[simd_group], visible to the group after a barrier. Whether the
// slice spans several.
template <typename R>
inline bool merge_within_simd_groups(
    thread typename R::state& state,
    threadgroup typename R::state* partials,
    thread const group_position& at,
    uint share) {
  state = merge_simd_group<R>(state, metal::min(share, at.simd_size));
  if (share <= at.simd_size) {
    return false;
  }
  if (at.lane == 0) {
    partials[at.simd_group] = state;
  }
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  return true;
}

// The states of `share` consecutive threads per slice (a power of two up to
// the SIMD width, a multiple of it, or the whole group), complete in each
// slice's first thread.
template <typename R>
inline typename R::state merge_consecutive(
    typename R::state state,
    threadgroup typename R::state* partials,
    thread const group_position& at,
    uint share) {
  if (!merge_within_simd_groups<R>(state, partials, at, share)) {
    return state;
  }
  const uint simd_groups_per_slice = (share + at.simd_size - 1) / at.simd_size;
  if (at.simd_group % simd_groups_per_slice == 0) {
    state = R::identity();
    if (at.lane < simd_groups_per_slice) {
      state = partials[at.simd_group + at.lane];
    }
    state = merge_simd_group<R>(state, at.simd_size);
  }
  return state;
}

// The same merge with the result in every thread of the slice, for kernels
// that go on to use it per element (masked_softmax). Up to the SIMD width
// the xor shuffles leave it in every lane (each lane merges the same values
// in an order that differs only by swapped operands, so the lanes agree bit
// for bit, up to the sign of a zero max and a NaN's payload); beyond, lane l
// of every SIMD group of the slice takes the slice's l-th SIMD group's
// partial (the identity past the last) and the same shuffles merge them:
// every SIMD group runs the same butterfly on the same values, lane for
// lane (share may be any multiple of the SIMD width up to 32 of them; the
// group holds whole slices, as the host's rows mapping makes it). One load
// and log2(SIMD width) merges per thread: merging the partials in order, a
// load and a merge per SIMD group, cost a row of 32768 held by 1024 threads
// as many instructions as its own elements.
// Ends with a barrier, so partials may be reused at once.
template <typename R>
inline typename R::state merge_consecutive_to_all(
    typename R::state state,
    threadgroup typename R::state* partials,
    thread const group_position& at,
    uint share) {
  if (!merge_within_simd_groups<R>(state, partials, at, share)) {
    return state;
  }
  const uint simd_groups_per_slice = share / at.simd_size;
  const uint first_group = at.simd_group / simd_groups_per_slice * simd_groups_per_slice;
  state = R::identity();
  if (at.lane < simd_groups_per_slice) {
    state = partials[first_group + at.lane];
  }
  state = merge_simd_group<R>(state, at.simd_size);
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  return state;
}

// The states of a column-mapped group's rows, complete in row 0. The rows
// after the first leave theirs in threadgroup memory; row 0 merges them in
// row order.
template <typename R>
inline typename R::state merge_rows(
    typename R::state state,
    threadgroup typename R::state* partials,
    thread const group_position& at,
    uint columns,
    uint rows) {
  if (rows == 1) {
    return state;
  }
  const uint row = at.index / columns, column = at.index % columns;
  if (row > 0) {
    partials[(row - 1) * columns + column] = state;
  }
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  if (row == 0) {
    for (uint r = 1; r < rows; ++r) {
      state = R::merge(state, partials[(r - 1) * columns + column]);
    }
  }
  return state;
}

// The state of each slice, complete where finishes_slice: every thread of
// the group calls it (it may pass a barrier). partials holds partial_states.
template <typename R>
inline typename R::state merge_slice(
    typename R::state state,
    threadgroup typename R::state* partials,
    constant reduction_layout& layout,
    thread const group_position& at) {
  if (layout.columns == 0) {
    return merge_consecutive<R>(state, partials, at, uint(layout.threads_per_slice));
  }
  return merge_rows<R>(state, partials, at, uint(layout.columns), uint(layout.threads_per_slice));
}

// The whole threadgroup's state, complete in thread 0 (for kernels that fold
// their own values one group per slice). partials holds one state per SIMD
// group: 32 at most (Metal's 1024-thread limit over the SIMD width).
template <typename R>
inline typename R::state merge_threadgroup(
    typename R::state state,
    threadgroup typename R::state* partials,
    thread const group_position& at) {
  return merge_consecutive<R>(state, partials, at, metal::max(at.size, at.simd_size));
}

// This thread's share of its slice (of chunk `chunk` of it where the host
// split slices) folded and merged with the other threads of the slice: the
// slice's (chunk's) state, complete where finishes_slice(t). Always inlined
// (as Apple's own METAL_FUNC is): a kernel pair sharing one reducer
// (batch_norm_stats and batch_norm_update_stats) made the inliner call it
// out of line, its slice_thread then passed through local memory. The source
// is one input (reduce_slice) or what fold_walk's note describes.
template <typename R, typename Source>
inline __attribute__((__always_inline__)) typename R::state reduce_slice_of(
    Source source,
    constant reduction_layout& layout,
    thread const slice_thread& t,
    threadgroup typename R::state* partials,
    thread const group_position& at,
    uint chunk = 0) {
  typename R::state state = R::identity();
  if (t.active) {
    const element_range range = chunk_elements(layout, chunk);
    if (layout.narrow_offsets) {
      state = fold_source<R>(state, source, layout, slice_offset<uint>(layout, uint(t.slice)),
                             uint(range.begin) + t.first, uint(range.end), t.step);
    } else {
      state = fold_source<R>(state, source, layout, slice_offset<ulong>(layout, uint(t.slice)),
                             range.begin + t.first, range.end, t.step);
    }
  }
  return merge_slice<R>(state, partials, layout, at);
}
template <typename R, typename In>
inline __attribute__((__always_inline__)) typename R::state reduce_slice(
    constant In* in,
    constant reduction_layout& layout,
    thread const slice_thread& t,
    threadgroup typename R::state* partials,
    thread const group_position& at,
    uint chunk = 0) {
  return reduce_slice_of<R>(one_input<In>{in}, layout, t, partials, at, chunk);
}

// This thread's share of its slice folded (reduce_slice_of before its
// merge), for origin_first_element's two folds. reduce_slice_of keeps its
// own copy of these lines: written as this fold and a merge, it changed the
// CUDA target's code for max, min and aminmax throughout (PTX at 5ec1408,
// measured, against 20,000 lines of differences, unmeasured).
template <typename R, typename Source>
inline __attribute__((__always_inline__)) typename R::state fold_slice_of(
    Source source,
    constant reduction_layout& layout,
    thread const slice_thread& t,
    uint chunk) {
  typename R::state state = R::identity();
  if (t.active) {
    const element_range range = chunk_elements(layout, chunk);
    if (layout.narrow_offsets) {
      state = fold_source<R>(state, source, layout, slice_offset<uint>(layout, uint(t.slice)),
                             uint(range.begin) + t.first, uint(range.end), t.step);
    } else {
      state = fold_source<R>(state, source, layout, slice_offset<ulong>(layout, uint(t.slice)),
                             range.begin + t.first, range.end, t.step);
    }
  }
  return state;
}

struct origin_zero {};
struct origin_first_element {};
template <typename R, typename = void>
struct origin_of {
  using type = origin_zero;
};
template <typename R>
struct origin_of<R, typename void_if_type<typename R::origin>::type> {
  using type = typename R::origin;
};

// Where split slices' origins lie in the scratch buffer: after every chunk
// state, one float per slice (a shifted reducer's state leaves room for it:
// checked below).
template <typename R>
inline ulong chunk_origins_from(constant reduction_layout& layout) {
  return ulong(slice_count(layout)) * chunk_count(layout) * sizeof(typename R::state);
}

// How each kind of origin is found, read, stored and taken back out
// (template arguments, never values, as run_folding).
template <typename Origin>
struct slice_origin;
template <>
struct slice_origin<origin_zero> {
  static constexpr uint stored_bytes() { return 0; }
  template <typename In>
  static float of(constant In*, constant reduction_layout&, thread const slice_thread&) {
    return 0.0f;
  }
  template <typename R, typename In>
  static typename R::state reduce(constant In* in, float, constant reduction_layout& layout,
                                  thread const slice_thread& t, threadgroup typename R::state* partials,
                                  thread const group_position& at, uint chunk) {
    return reduce_slice_of<R>(one_input<In>{in}, layout, t, partials, at, chunk);
  }
  template <typename R>
  static void store(device uchar*, constant reduction_layout&, ulong, float) {}
  template <typename R>
  static float stored(constant uchar*, constant reduction_layout&, ulong) {
    return 0.0f;
  }
  template <typename R>
  static typename R::state about_zero(typename R::state state, float) {
    return state;
  }
};
template <>
struct slice_origin<origin_first_element> {
  static constexpr uint stored_bytes() { return sizeof(float); }
  template <typename In>
  static float of(constant In* in, constant reduction_layout& layout, thread const slice_thread& t) {
    if (!t.active || layout.inner_numel == 0) {
      return 0.0f;
    }
    const ulong start = slice_offset<ulong>(layout, uint(t.slice));
    const float first = static_cast<float>(in[start]);
    // The second element: the slice's first step along its innermost
    // reduced dim, or, where that dim has one element, the same again.
    const float second = layout.inner_numel > 1 && layout.inner_sizes[0] > 1
                             ? static_cast<float>(in[start + ulong(layout.inner_strides[0])])
                             : first;
    const bool offset = metal::fabs(second - first) * 64.0f <= metal::fabs(first);
    return metal::isfinite(first) && metal::fabs(first) <= 0x1p100f && offset ? first : 0.0f;
  }
  // A slice about 0 takes the plain fold (one branch per slice, the same for
  // all its threads): values centred near 0, the common case, pay no
  // subtraction per element.
  template <typename R, typename In>
  static typename R::state reduce(constant In* in, float origin, constant reduction_layout& layout,
                                  thread const slice_thread& t, threadgroup typename R::state* partials,
                                  thread const group_position& at, uint chunk) {
    // The merge outside the branch on the origin: it may pass a barrier,
    // which every thread of the group must reach.
    const typename R::state state = origin != 0.0f ? fold_slice_of<R>(shifted_input<In>{in, origin}, layout, t, chunk)
                                                   : fold_slice_of<R>(one_input<In>{in}, layout, t, chunk);
    return merge_slice<R>(state, partials, layout, at);
  }
  template <typename R>
  static void store(device uchar* chunk_states, constant reduction_layout& layout, ulong slice, float origin) {
    reinterpret_cast<device float*>(chunk_states + chunk_origins_from<R>(layout))[slice] = origin;
  }
  template <typename R>
  static float stored(constant uchar* chunk_states, constant reduction_layout& layout, ulong slice) {
    return reinterpret_cast<constant float*>(chunk_states + chunk_origins_from<R>(layout))[slice];
  }
  template <typename R>
  static typename R::state about_zero(typename R::state state, float origin) {
    return R::moved_by(state, origin);
  }
};
template <typename R>
using origin_rules = slice_origin<typename origin_of<R>::type>;

// reduce_slice for any reducer, about its slice's origin (see origin_zero).
template <typename R, typename In>
inline __attribute__((__always_inline__)) typename R::state reduce_slice_about(
    constant In* in,
    float origin,
    constant reduction_layout& layout,
    thread const slice_thread& t,
    threadgroup typename R::state* partials,
    thread const group_position& at,
    uint chunk = 0) {
  return origin_rules<R>::template reduce<R>(in, origin, layout, t, partials, at, chunk);
}

// Where a split slice's chunk states lie in the scratch buffer: slice by
// slice, each slice's chunks in order.
template <typename R>
inline ulong chunk_state_index(constant reduction_layout& layout, ulong slice, uint chunk) {
  static_assert(sizeof(typename R::state) + origin_rules<R>::stored_bytes() <= max_chunk_state_bytes,
                "a reducer state (and origin) larger than the host's scratch allows per state");
  return slice * chunk_count(layout) + chunk;
}

// The first pass's store of one chunk's state (and, from its first chunk,
// its slice's origin).
template <typename R>
inline void store_chunk_state(device uchar* chunk_states, constant reduction_layout& layout, ulong slice,
                              uint chunk, typename R::state state, float origin = 0.0f) {
  reinterpret_cast<device typename R::state*>(chunk_states)[chunk_state_index<R>(layout, slice, chunk)] = state;
  if (chunk == 0) {
    origin_rules<R>::template store<R>(chunk_states, layout, slice, origin);
  }
}

// This thread's run of a split slice's chunk states (from the first pass),
// merged in chunk order. Rows mapping (threads_per_slice threads per slice):
// thread t of the slice takes a run of consecutive chunks, and merge_slice
// then merges lower threads' states before higher ones', so every merge
// takes an earlier part of the slice before a later one.
template <typename R>
inline typename R::state merge_chunk_run(
    constant uchar* chunk_states,
    constant reduction_layout& layout,
    thread const slice_thread& t) {
  typename R::state state = R::identity();
  if (t.active) {
    const uint chunks = chunk_count(layout);
    const uint run = (chunks + t.step - 1) / t.step;
    const uint begin = metal::min(t.first * run, chunks), end = metal::min(begin + run, chunks);
    constant typename R::state* states = reinterpret_cast<constant typename R::state*>(chunk_states);
    const ulong first = chunk_state_index<R>(layout, t.slice, 0);
    for (uint c = begin; c < end; ++c) {
      const typename R::state chunk = states[first + c];
      state = R::merge(state, chunk);
    }
  }
  return state;
}

// A split slice's finished state about 0 (its chunks were read about the
// origin its first chunk stored).
template <typename R>
inline typename R::state merged_about_zero(typename R::state state, constant uchar* chunk_states,
                                           constant reduction_layout& layout, thread const slice_thread& t) {
  return origin_rules<R>::template about_zero<R>(state,
                                                 origin_rules<R>::template stored<R>(chunk_states, layout, t.slice));
}

// Reductions with one output per slice (max, min, std, var, sum): out[slice]
// = R::finish(state, params).
// Where the host split slices (layout.chunk_shift > 0), each group stores its
// chunk's state in chunk_states instead, for reduce_one_merge; otherwise
// chunk_states is bound but never touched.
template <typename R, typename Out, typename In>
inline void reduce_one_slices(device Out* out, device uchar* chunk_states, constant In* in,
                              constant reduction_layout& layout, constant typename R::params& params,
                              threadgroup typename R::state* partials, uint3 group,
                              thread const group_position& at) {
  const slice_thread t = place_thread(layout, group.y, at);
  const float origin = origin_rules<R>::of(in, layout, t);
  const typename R::state state =
      reduce_slice_about<R>(in, origin, layout, t, partials, at, group.z);
  if (finishes_slice(t)) {
    if (layout.chunk_shift != 0) {
      store_chunk_state<R>(chunk_states, layout, t.slice, group.z, state, origin);
    } else {
      out[t.slice] = reducer_result<Out>(R::finish(origin_rules<R>::template about_zero<R>(state, origin), params));
    }
  }
}

#define MPS_OPS_REDUCE_ONE_PARAMS                                    \
  device Out *out [[buffer(0)]], device uchar *chunk_states [[buffer(1)]], \
      constant In *in [[buffer(2)]], constant reduction_layout &layout [[buffer(3)]], \
      constant typename R::params &params [[buffer(4)]], uint3 group [[threadgroup_position_in_grid]], \
      uint index [[thread_index_in_threadgroup]], uint3 group_size [[threads_per_threadgroup]], \
      uint lane [[thread_index_in_simdgroup]], uint simd_group [[simdgroup_index_in_threadgroup]], \
      uint simd_size [[threads_per_simdgroup]]

template <typename R, typename Out, typename In>
kernel void reduce_one(MPS_OPS_REDUCE_ONE_PARAMS) {
  threadgroup typename R::state partials[partial_states];
  reduce_one_slices<R>(out, chunk_states, in, layout, params, partials, group,
                       group_position{index, group_size.x, lane, simd_group, simd_size});
}

// The same for reducers whose kernel is declared for groups of at most 256
// threads, the most the host's mappings give reduce_one (reduction.cpp's
// group_threads): the compiler then keeps registers for groups of 256, where
// Metal's 1024 made it plan for one group per core. On an H200 (ptxas, whose
// occupancy target follows the bound) var/std's kernels went from 55 to 48
// registers and 0.92x to 1.02x torch's kernel on square half rows;
// max/min's went from 48 to 40 registers and measured 3% slower, so they
// keep reduce_one. An Apple GPU's compiler reads the attribute for its
// register allocation too.
template <typename R, typename Out, typename In>
[[max_total_threads_per_threadgroup(256)]] kernel void reduce_one_within_256(MPS_OPS_REDUCE_ONE_PARAMS) {
  threadgroup typename R::state partials[partial_states];
  reduce_one_slices<R>(out, chunk_states, in, layout, params, partials, group,
                       group_position{index, group_size.x, lane, simd_group, simd_size});
}
#undef MPS_OPS_REDUCE_ONE_PARAMS

// The second pass of a split reduce_one: out[slice] = R::finish(the slice's
// chunk states merged in order, params), as reduce_one would have written.
// The layout is reduce_one's with the rows mapping over chunk states.
template <typename R, typename Out, typename In>
kernel void reduce_one_merge(
    device Out* out [[buffer(0)]],
    constant uchar* chunk_states [[buffer(1)]],
    constant reduction_layout& layout [[buffer(2)]],
    constant typename R::params& params [[buffer(3)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup typename R::state partials[partial_states];
  group_position at{index, group_size.x, lane, simd_group, simd_size};
  const slice_thread t = place_thread(layout, group.y, at);
  const typename R::state state =
      merge_slice<R>(merge_chunk_run<R>(chunk_states, layout, t), partials, layout, at);
  if (finishes_slice(t)) {
    out[t.slice] = reducer_result<Out>(R::finish(merged_about_zero<R>(state, chunk_states, layout, t), params));
  }
}

// Reductions with two outputs per slice (aminmax, batch_norm_stats,
// var_mean): R::finish(state, params, out0[slice], out1[slice]).
// Split slices as reduce_one's.
#define MPS_OPS_REDUCE_TWO_PARAMS                                                              \
  device Out *out0 [[buffer(0)]], device Out *out1 [[buffer(1)]],                               \
      device uchar *chunk_states [[buffer(2)]], constant In *in [[buffer(3)]],                  \
      constant reduction_layout &layout [[buffer(4)]], constant typename R::params &params [[buffer(5)]], \
      uint3 group [[threadgroup_position_in_grid]], uint index [[thread_index_in_threadgroup]], \
      uint3 group_size [[threads_per_threadgroup]], uint lane [[thread_index_in_simdgroup]],    \
      uint simd_group [[simdgroup_index_in_threadgroup]], uint simd_size [[threads_per_simdgroup]]

template <typename R, typename Out, typename In>
inline void reduce_two_slices(device Out* out0, device Out* out1, device uchar* chunk_states, constant In* in,
                              constant reduction_layout& layout, constant typename R::params& params,
                              threadgroup typename R::state* partials, uint3 group, thread const group_position& at) {
  const slice_thread t = place_thread(layout, group.y, at);
  const float origin = origin_rules<R>::of(in, layout, t);
  const typename R::state state =
      reduce_slice_about<R>(in, origin, layout, t, partials, at, group.z);
  if (finishes_slice(t)) {
    if (layout.chunk_shift != 0) {
      store_chunk_state<R>(chunk_states, layout, t.slice, group.z, state, origin);
    } else {
      R::finish(origin_rules<R>::template about_zero<R>(state, origin), params, out0[t.slice], out1[t.slice]);
    }
  }
}

template <typename R, typename Out, typename In>
kernel void reduce_two(MPS_OPS_REDUCE_TWO_PARAMS) {
  threadgroup typename R::state partials[partial_states];
  reduce_two_slices<R>(out0, out1, chunk_states, in, layout, params, partials, group,
                       group_position{index, group_size.x, lane, simd_group, simd_size});
}

// reduce_one_within_256's bound for reduce_two (var_mean: 64 registers
// without it, 48 with it on an H200, as var's).
template <typename R, typename Out, typename In>
[[max_total_threads_per_threadgroup(256)]] kernel void reduce_two_within_256(MPS_OPS_REDUCE_TWO_PARAMS) {
  threadgroup typename R::state partials[partial_states];
  reduce_two_slices<R>(out0, out1, chunk_states, in, layout, params, partials, group,
                       group_position{index, group_size.x, lane, simd_group, simd_size});
}
#undef MPS_OPS_REDUCE_TWO_PARAMS

// The second pass of a split reduce_two.
template <typename R, typename Out, typename In>
kernel void reduce_two_merge(
    device Out* out0 [[buffer(0)]],
    device Out* out1 [[buffer(1)]],
    constant uchar* chunk_states [[buffer(2)]],
    constant reduction_layout& layout [[buffer(3)]],
    constant typename R::params& params [[buffer(4)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup typename R::state partials[partial_states];
  group_position at{index, group_size.x, lane, simd_group, simd_size};
  const slice_thread t = place_thread(layout, group.y, at);
  const typename R::state state =
      merge_slice<R>(merge_chunk_run<R>(chunk_states, layout, t), partials, layout, at);
  if (finishes_slice(t)) {
    R::finish(merged_about_zero<R>(state, chunk_states, layout, t), params, out0[t.slice], out1[t.slice]);
  }
}

}  // namespace mps_ops
// Host names `<op>_reduce_<out>_<in>` (the one grammar's reduce variant) and
// `<op>_merge_<out>_<in>` (the merge pass of split slices): the host runs
// the second where it splits slices over several groups.
// The _SAME_TYPE forms take one type for both, the shape dtype sets apply:
//   MPS_OPS_FOR_FLOATING(REGISTER_REDUCE_ONE_OP_SAME_TYPE, var)
#define REGISTER_REDUCE_ONE_OP_WITH(KERNEL, OP, OUT, IN)                                       \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, reduce, OUT, IN), KERNEL, OP##_reducer<IN>, OUT, IN) \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, merge, OUT, IN), mps_ops::reduce_one_merge,          \
                      OP##_reducer<IN>, OUT, IN)
#define REGISTER_REDUCE_ONE_OP(OP, OUT, IN) REGISTER_REDUCE_ONE_OP_WITH(mps_ops::reduce_one, OP, OUT, IN)
#define REGISTER_REDUCE_ONE_OP_SAME_TYPE(OP, T) REGISTER_REDUCE_ONE_OP(OP, T, T)
// The same with reduce_one_within_256's reduce kernel.
#define REGISTER_REDUCE_ONE_OP_WITHIN_256(OP, OUT, IN) \
  REGISTER_REDUCE_ONE_OP_WITH(mps_ops::reduce_one_within_256, OP, OUT, IN)
#define REGISTER_REDUCE_ONE_OP_WITHIN_256_SAME_TYPE(OP, T) REGISTER_REDUCE_ONE_OP_WITHIN_256(OP, T, T)
#define REGISTER_REDUCE_TWO_OP_WITH(KERNEL, OP, OUT, IN)                                       \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, reduce, OUT, IN), KERNEL, OP##_reducer<IN>, OUT, IN) \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, merge, OUT, IN), mps_ops::reduce_two_merge,          \
                      OP##_reducer<IN>, OUT, IN)
#define REGISTER_REDUCE_TWO_OP(OP, OUT, IN) REGISTER_REDUCE_TWO_OP_WITH(mps_ops::reduce_two, OP, OUT, IN)
#define REGISTER_REDUCE_TWO_OP_SAME_TYPE(OP, T) REGISTER_REDUCE_TWO_OP(OP, T, T)
// The same with reduce_two_within_256's reduce kernel.
#define REGISTER_REDUCE_TWO_OP_WITHIN_256_SAME_TYPE(OP, T) \
  REGISTER_REDUCE_TWO_OP_WITH(mps_ops::reduce_two_within_256, OP, T, T)
