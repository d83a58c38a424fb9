// Element-wise kernel templates and the macros that instantiate them.
//
// A functor F computes one element: `f(a)` or `f(a, b)` returning the value
// to store, of exactly the output type (functor_result checks it at compile
// time), or for two outputs, `F()(a, out0, out1)` writing both. A functor
// with parameters beyond its operands (add_relu's alpha, logit's eps)
// declares `using params = <struct in params.h>;` and a constructor from
// `constant params&`; every kernel takes a params argument last (after its
// operands and the element count, or sizes/strides/ndim for strided),
// no_params for the others, so one template serves both. Each REGISTER_*_OP
// instantiates, for one (output dtype, input dtype) pair, the variants the
// host chooses from (csrc/runtime/elementwise.cpp), each thread taking
// several elements (per_thread below):
//   dense              every operand contiguous in one order: 1-D grid over
//                      the element count n
//   strided            any layout: 2-D grid, x = innermost dim, y = the rest;
//                      32-bit sizes and byte strides; a scalar operand is a
//                      0-stride buffer
//   dense_lhs_scalar,  (binary only) one operand is a single value bound with
//   dense_rhs_scalar   setBytes, the other dense
#pragma once
#include <metal_stdlib>

#include <mps_ops/instantiate.h>
#include <mps_ops/no_params.h>
#include <mps_ops/per_element.h>
#include <mps_ops/shape_limits.h>
#include <mps_ops/types.h>

namespace mps_ops {

// F::params where F declares it, else no_params.
template <typename F, typename = void>
struct params_of {
  using type = no_params;
};
template <typename F>
struct params_of<F, typename void_if_type<typename F::params>::type> {
  using type = typename F::params;
};
template <typename F>
using params_t = typename params_of<F>::type;

// Byte offsets of NOPS operands at the start of row `row` of a strided grid
// (x = the innermost dim, y = the rest). strides is laid out [operand][dim];
// the kernels keep operand N's innermost stride as strideN.
// 32-bit throughout: the host dispatches 32-bit indexable pieces only (every
// byte offset below 2**31), and a GPU divides 32-bit integers in a few
// instructions but 64-bit ones in software. The outermost dim's coordinate is
// what is left of the row, so 2-D iterations divide nothing.
template <uint NOPS>
inline void row_offsets(
    uint row,
    constant uint* sizes,
    constant int* strides,
    uint ndim,
    thread int* offsets) {
  for (uint op = 0; op < NOPS; ++op) {
    offsets[op] = 0;
  }
  for (uint d = 1; d < ndim; ++d) {
    const uint coord = d + 1 < ndim ? row % sizes[d] : row;
    row /= sizes[d];
    for (uint op = 0; op < NOPS; ++op) {
      offsets[op] += int(coord) * strides[op * ndim + d];
    }
  }
}

// Several elements per thread, up to elements_per_thread of them
// (shape_limits.h), all loaded before any is computed: several loads are in
// flight per thread where one would leave the memory system waiting, and a
// thread's set-up (its place, the functor's parameters, a strided row's
// offsets) is paid once for them all, on an Apple GPU as on any other.
// Dense grids deal out tiles of elementwise_tile threads: each load of a
// SIMD group reads neighbouring elements, and a thread's elements lie within
// a few hundred bytes (spread over the whole grid instead, each would sit on
// its own DRAM page and TLB entry: 0.5x the bandwidth on an H100). A strided
// row's threads step by the row's thread count.
template <typename T>
constexpr uint per_thread() {
  return elements_per_thread(sizeof(T));
}

// The first element of dense-grid thread `thread_index`; the others follow
// at steps of elementwise_tile (per_element.h's tiles).
template <typename T>
inline uint first_element(uint thread_index) {
  return per_element_first<per_thread<T>()>(thread_index);
}

template <typename T>
inline device T& element_at(device char* base, int offset) {
  return *reinterpret_cast<device T*>(base + offset);
}

template <typename T>
inline T element_at(constant char* base, int offset) {
  return *reinterpret_cast<constant T*>(base + offset);
}

// The functor of one dispatch: built from the kernel's params where the
// functor declares `using params = ...;` and a constructor taking
// `constant params&`, default-constructed otherwise (params_t<F> is then
// no_params and the host binds an empty one).
template <typename F>
inline F make_functor(constant no_params&) {
  return F();
}
template <typename F, typename P>
inline F make_functor(constant P& params) {
  return F(params);
}

// Every loop over a thread's elements is unrolled in full (the compiler
// leaves a heavy functor's loop rolled otherwise): the elements then live in
// registers, where a rolled loop indexing them would put them in the stack,
// in device memory on both Apple GPUs and NVIDIA's.
//
// values[k] = src[first + k * elementwise_tile]: a dense-grid thread's
// elements, those below count (all of them where Whole: whole_dense_tile).
template <bool Whole = false, typename T>
inline void load_dense(thread T* values, constant T* src, uint first, uint count) {
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < per_thread<T>(); ++k) {
    const uint i = first + k * elementwise_tile;
    if (Whole || i < count) {
      values[k] = src[i];
    }
  }
}

// Whether a dense-grid thread's tile lies wholly below count, in either
// layout below (per_element.h's per_element_whole_tile says why it matters).
template <typename T>
inline bool whole_dense_tile(uint first, uint count) {
  return per_element_whole_tile<per_thread<T>()>(first, count);
}

// How a dense-grid thread takes its elements (dense_layout<In, Out> picks):
//   first(thread_index)        its first element
//   at(first, k)               its k-th element (the functor runs on those below count only:
//                              an integer division by garbage would trap in the emulator)
//   load<Whole>(values, src, first, count) / store<Whole>(dst, values, first, count)
//                              its elements below count (all where Whole), values[k]
//                              for its k-th
// single_dense_elements: one element per load and store, lane l of a tile
// taking l, l + elementwise_tile, ... (first_element, load_dense).
template <typename T>
struct single_dense_elements {
  static uint first(uint thread_index) {
    return first_element<T>(thread_index);
  }
  static uint at(uint first, uint k) {
    return first + k * elementwise_tile;
  }
  template <bool Whole, typename U>
  static void load(thread U* values, constant U* src, uint first, uint count) {
    load_dense<Whole>(values, src, first, count);
  }
  template <bool Whole, typename U>
  static void store(device U* dst, thread const U* values, uint first, uint count) {
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < per_thread<T>(); ++k) {
      if (Whole || at(first, k) < count) {
        dst[at(first, k)] = values[k];
      }
    }
  }
};

// paired_dense_elements: 2-byte elements in and out (half, bfloat16, short) two per
// 32-bit load and store, lane l of a tile taking 2l and 2l + 1, then the same
// 2 * elementwise_tile further on: half the load and store instructions of
// single elements for the same bytes, on an Apple GPU as on NVIDIA's (H200,
// dense half and bfloat16: heaviside, threshold, threshold_backward,
// hardtanh_backward 0.86-0.88x -> 0.95-1.00x torch's CUDA kernels, logit_
// 0.84 -> 0.87-0.94x). A whole tile (whole_dense_tile) loads words with no
// per-element check (checked loads behind branches left one load in flight:
// 0.6x); the grid's last, partial tile takes its elements one at a time. The host takes these
// kernels only where every operand is 4-byte aligned (exec_elementwise), so
// each pair is one aligned word.
template <typename T>
struct paired_dense_elements {
  static constexpr uint tile_elements() {
    return elementwise_tile * per_thread<T>();
  }
  static uint first(uint thread_index) {
    return thread_index / elementwise_tile * tile_elements() + 2 * (thread_index % elementwise_tile);
  }
  // The k-th element: pair k / 2, element k % 2 of it.
  static uint at(uint first, uint k) {
    return first + k / 2 * (2 * elementwise_tile) + k % 2;
  }
  template <bool Whole, typename U>
  static void load(thread U* values, constant U* src, uint first, uint count) {
    if (Whole) {
      constant uint* words = reinterpret_cast<constant uint*>(src);
      _Pragma("clang loop unroll(full)")
      for (uint k = 0; k < per_thread<T>(); k += 2) {
        const uint word = words[at(first, k) / 2];
        values[k] = metal::as_type<U>(ushort(word & 0xffffu));
        values[k + 1] = metal::as_type<U>(ushort(word >> 16));
      }
      return;
    }
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < per_thread<T>(); ++k) {
      if (at(first, k) < count) {
        values[k] = src[at(first, k)];
      }
    }
  }
  template <bool Whole, typename U>
  static void store(device U* dst, thread const U* values, uint first, uint count) {
    if (Whole) {
      device uint* words = reinterpret_cast<device uint*>(dst);
      _Pragma("clang loop unroll(full)")
      for (uint k = 0; k < per_thread<T>(); k += 2) {
        words[at(first, k) / 2] = uint(metal::as_type<ushort>(values[k])) |
                                  (uint(metal::as_type<ushort>(values[k + 1])) << 16);
      }
      return;
    }
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < per_thread<T>(); ++k) {
      if (at(first, k) < count) {
        dst[at(first, k)] = values[k];
      }
    }
  }
};

template <bool Paired, typename In>
struct dense_layout_of {
  using type = single_dense_elements<In>;
};
template <typename In>
struct dense_layout_of<true, In> {
  using type = paired_dense_elements<In>;
};
// Single-output dense kernels pair their elements where input and output
// are both 2 bytes wide (exec_elementwise in csrc/runtime/elementwise.cpp
// checks that every operand starts on a word).
template <typename In, typename Out>
using dense_layout = typename dense_layout_of<sizeof(In) == 2 && sizeof(Out) == 2, In>::type;

// values[k] = the T at byte offset base + (x + k * step) * stride: a strided
// row's thread's elements, those with x + k * step below inner.
template <typename T>
inline void load_row(thread T* values, constant char* src, int base, int stride, uint x, uint step,
                     uint inner) {
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < per_thread<T>(); ++k) {
    const uint at = x + k * step;
    if (at < inner) {
      values[k] = element_at<T>(src, base + int(at) * stride);
    }
  }
}

// The value a functor returned, to store as Out. A functor returns exactly
// the output type its instantiation names: a mismatch (a float result stored
// into a half output, an integer functor instantiated for a float output)
// is an instantiation mistake, not a conversion to make silently.
template <typename Out, typename Result>
inline Out functor_result(Result value) {
  static_assert(metal::is_same_v<Result, Out>,
                "the functor's result type is not the output type its instantiation names");
  return value;
}

// A dense-grid thread's elements through f: all of them where Whole
// (whole_dense_tile), else those below count.
template <bool Whole, typename Layout, typename F, typename Out, typename In>
inline void unary_dense_elements(thread const F& f, device Out* out, constant In* in, uint first, uint count) {
  In a[per_thread<In>()];
  Out results[per_thread<In>()];
  Layout::template load<Whole>(a, in, first, count);
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < per_thread<In>(); ++k) {
    if (Whole || Layout::at(first, k) < count) {
      results[k] = functor_result<Out>(f(a[k]));
    }
  }
  Layout::template store<Whole>(out, results, first, count);
}

// A dense-grid thread of any element-wise kernel: its elements through
// elements.run<Whole, Layout>(first, count), unchecked (Whole) where its
// tile lies wholly below count.
template <typename In, typename Out, typename Elements>
inline void dense_thread(thread const Elements& elements, uint count, uint thread_index) {
  using layout = dense_layout<In, Out>;
  const uint first = layout::first(thread_index);
  if (whole_dense_tile<In>(first, count)) {
    elements.template run<true, layout>(first, count);
  } else {
    elements.template run<false, layout>(first, count);
  }
}

// The element-wise kernels' operands for dense_thread, the thread's own
// values (functor, binary operands) by pointer: brace-initialising a
// member from a thread-space struct is a copy Metal's address spaces do
// not allow (tools/check_address_spaces.py); inlined, the pointers fold.
template <typename F, typename Out, typename In>
struct unary_elements {
  thread const F* f;
  device Out* out;
  constant In* in;
  template <bool Whole, typename Layout>
  void run(uint first, uint count) const {
    unary_dense_elements<Whole, Layout>(*f, out, in, first, count);
  }
};

template <typename F, typename Out, typename In, typename P>
kernel void unary_dense(
    device Out* out [[buffer(0)]],
    constant In* in [[buffer(1)]],
    constant uint& n [[buffer(2)]],
    constant P& params [[buffer(3)]],
    uint thread_index [[thread_position_in_grid]]) {
  const F f = make_functor<F>(params);
  const unary_elements<F, Out, In> elements{&f, out, in};
  dense_thread<In, Out>(elements, n, thread_index);
}

template <typename F, typename Out, typename In, typename P>
kernel void unary_strided(
    device char* out [[buffer(0)]],
    constant char* in [[buffer(1)]],
    constant uint* sizes [[buffer(2)]],
    constant int* strides [[buffer(3)]],
    constant uint& ndim [[buffer(4)]],
    constant P& params [[buffer(5)]],
    uint2 pos [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  int offsets[2];
  row_offsets<2>(pos.y, sizes, strides, ndim, offsets);
  const F f = make_functor<F>(params);
  const uint inner = sizes[0];
  const int stride0 = strides[0];
  const int stride1 = strides[ndim];
  In a[per_thread<In>()];
  load_row(a, in, offsets[1], stride1, pos.x, grid.x, inner);
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < per_thread<In>(); ++k) {
    const uint x = pos.x + k * grid.x;
    if (x < inner) {
      element_at<Out>(out, offsets[0] + int(x) * stride0) = functor_result<Out>(f(a[k]));
    }
  }
}

// A binary dense kernel's operand: a buffer of elements, or, in the _scalar
// variants, one value (bound with setBytes) for every element.
template <typename T>
struct dense_operand {
  constant T* src;
  template <bool Whole, typename Layout>
  void load(thread T* values, uint first, uint count) const {
    Layout::template load<Whole>(values, src, first, count);
  }
};
template <typename T>
struct scalar_operand {
  T value;
  template <bool Whole, typename Layout>
  void load(thread T* values, uint, uint) const {
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < per_thread<T>(); ++k) {
      values[k] = value;
    }
  }
};

// As unary_dense_elements, f(lhs, rhs).
template <bool Whole, typename Layout, typename F, typename Out, typename In, typename Lhs, typename Rhs>
inline void binary_dense_elements(thread const F& f, device Out* out, Lhs lhs, Rhs rhs, uint first, uint count) {
  In a[per_thread<In>()], b[per_thread<In>()];
  Out results[per_thread<In>()];
  lhs.template load<Whole, Layout>(a, first, count);
  rhs.template load<Whole, Layout>(b, first, count);
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < per_thread<In>(); ++k) {
    if (Whole || Layout::at(first, k) < count) {
      results[k] = functor_result<Out>(f(a[k], b[k]));
    }
  }
  Layout::template store<Whole>(out, results, first, count);
}

template <typename F, typename Out, typename In, typename Lhs, typename Rhs>
struct binary_elements {
  thread const F* f;
  device Out* out;
  thread const Lhs* lhs;
  thread const Rhs* rhs;
  template <bool Whole, typename Layout>
  void run(uint first, uint count) const {
    binary_dense_elements<Whole, Layout, F, Out, In>(*f, out, *lhs, *rhs, first, count);
  }
};

// The dense binary kernels' thread, whichever operand is a scalar.
template <typename F, typename Out, typename In, typename Lhs, typename Rhs>
inline void binary_dense_thread(thread const F& f, device Out* out, Lhs lhs, Rhs rhs, uint count, uint thread_index) {
  const binary_elements<F, Out, In, Lhs, Rhs> elements{&f, out, &lhs, &rhs};
  dense_thread<In, Out>(elements, count, thread_index);
}

template <typename F, typename Out, typename In, typename P>
kernel void binary_dense(
    device Out* out [[buffer(0)]],
    constant In* lhs [[buffer(1)]],
    constant In* rhs [[buffer(2)]],
    constant uint& n [[buffer(3)]],
    constant P& params [[buffer(4)]],
    uint thread_index [[thread_position_in_grid]]) {
  const F f = make_functor<F>(params);
  binary_dense_thread<F, Out, In>(f, out, dense_operand<In>{lhs}, dense_operand<In>{rhs}, n, thread_index);
}

template <typename F, typename Out, typename In, typename P>
kernel void binary_dense_lhs_scalar(
    device Out* out [[buffer(0)]],
    constant In& lhs [[buffer(1)]],
    constant In* rhs [[buffer(2)]],
    constant uint& n [[buffer(3)]],
    constant P& params [[buffer(4)]],
    uint thread_index [[thread_position_in_grid]]) {
  const F f = make_functor<F>(params);
  binary_dense_thread<F, Out, In>(f, out, scalar_operand<In>{lhs}, dense_operand<In>{rhs}, n, thread_index);
}

template <typename F, typename Out, typename In, typename P>
kernel void binary_dense_rhs_scalar(
    device Out* out [[buffer(0)]],
    constant In* lhs [[buffer(1)]],
    constant In& rhs [[buffer(2)]],
    constant uint& n [[buffer(3)]],
    constant P& params [[buffer(4)]],
    uint thread_index [[thread_position_in_grid]]) {
  const F f = make_functor<F>(params);
  binary_dense_thread<F, Out, In>(f, out, dense_operand<In>{lhs}, scalar_operand<In>{rhs}, n, thread_index);
}

template <typename F, typename Out, typename In, typename P>
kernel void binary_strided(
    device char* out [[buffer(0)]],
    constant char* lhs [[buffer(1)]],
    constant char* rhs [[buffer(2)]],
    constant uint* sizes [[buffer(3)]],
    constant int* strides [[buffer(4)]],
    constant uint& ndim [[buffer(5)]],
    constant P& params [[buffer(6)]],
    uint2 pos [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  int offsets[3];
  row_offsets<3>(pos.y, sizes, strides, ndim, offsets);
  const F f = make_functor<F>(params);
  const uint inner = sizes[0];
  const int stride0 = strides[0];
  const int stride1 = strides[ndim];
  const int stride2 = strides[2 * ndim];
  In a[per_thread<In>()], b[per_thread<In>()];
  load_row(a, lhs, offsets[1], stride1, pos.x, grid.x, inner);
  load_row(b, rhs, offsets[2], stride2, pos.x, grid.x, inner);
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < per_thread<In>(); ++k) {
    const uint x = pos.x + k * grid.x;
    if (x < inner) {
      element_at<Out>(out, offsets[0] + int(x) * stride0) = functor_result<Out>(f(a[k], b[k]));
    }
  }
}

// The strided ternary kernels' row: Outputs (1 or 2) outputs, then the
// three inputs, in the strides table; g(a, b, c, out0, out1) for each of
// the thread's elements (a one-output op's functor through one_output,
// which writes out0 only: out1 is then out0 again).
template <uint Outputs, typename Out, typename In, typename G>
inline void ternary_strided_row(thread const G& g, device char* out0, device char* out1, constant char* in0,
                                constant char* in1, constant char* in2, constant uint* sizes,
                                constant int* strides, uint ndim, uint2 pos, uint2 grid) {
  int offsets[Outputs + 3];
  row_offsets<Outputs + 3>(pos.y, sizes, strides, ndim, offsets);
  const uint inner = sizes[0];
  In a[per_thread<In>()], b[per_thread<In>()], c[per_thread<In>()];
  load_row(a, in0, offsets[Outputs], strides[Outputs * ndim], pos.x, grid.x, inner);
  load_row(b, in1, offsets[Outputs + 1], strides[(Outputs + 1) * ndim], pos.x, grid.x, inner);
  load_row(c, in2, offsets[Outputs + 2], strides[(Outputs + 2) * ndim], pos.x, grid.x, inner);
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < per_thread<In>(); ++k) {
    const uint x = pos.x + k * grid.x;
    if (x < inner) {
      g(a[k], b[k], c[k], element_at<Out>(out0, offsets[0] + int(x) * strides[0]),
        element_at<Out>(out1, offsets[Outputs - 1] + int(x) * strides[(Outputs - 1) * ndim]));
    }
  }
}

// A one-output ternary functor f(a, b, c) in the two-output form.
template <typename F, typename Out>
struct one_output {
  F f;
  template <typename In>
  void operator()(In a, In b, In c, device Out& out, device Out&) const {
    out = functor_result<Out>(f(a, b, c));
  }
};

// One output from three inputs of one type (_dirichlet_grad: x, alpha,
// total): f(a, b, c), as the binary kernels otherwise.
template <bool Whole, typename Layout, typename F, typename Out, typename In>
inline void ternary_dense_elements(thread const F& f, device Out* out, constant In* in0, constant In* in1,
                                   constant In* in2, uint first, uint count) {
  In a[per_thread<In>()], b[per_thread<In>()], c[per_thread<In>()];
  Out results[per_thread<In>()];
  Layout::template load<Whole>(a, in0, first, count);
  Layout::template load<Whole>(b, in1, first, count);
  Layout::template load<Whole>(c, in2, first, count);
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < per_thread<In>(); ++k) {
    if (Whole || Layout::at(first, k) < count) {
      results[k] = functor_result<Out>(f(a[k], b[k], c[k]));
    }
  }
  Layout::template store<Whole>(out, results, first, count);
}

template <typename F, typename Out, typename In>
struct ternary_elements {
  thread const F* f;
  device Out* out;
  constant In* in0;
  constant In* in1;
  constant In* in2;
  template <bool Whole, typename Layout>
  void run(uint first, uint count) const {
    ternary_dense_elements<Whole, Layout>(*f, out, in0, in1, in2, first, count);
  }
};

template <typename F, typename Out, typename In, typename P>
kernel void ternary_dense(
    device Out* out [[buffer(0)]],
    constant In* in0 [[buffer(1)]],
    constant In* in1 [[buffer(2)]],
    constant In* in2 [[buffer(3)]],
    constant uint& n [[buffer(4)]],
    constant P& params [[buffer(5)]],
    uint thread_index [[thread_position_in_grid]]) {
  const F f = make_functor<F>(params);
  const ternary_elements<F, Out, In> elements{&f, out, in0, in1, in2};
  dense_thread<In, Out>(elements, n, thread_index);
}

template <typename F, typename Out, typename In, typename P>
kernel void ternary_strided(
    device char* out [[buffer(0)]],
    constant char* in0 [[buffer(1)]],
    constant char* in1 [[buffer(2)]],
    constant char* in2 [[buffer(3)]],
    constant uint* sizes [[buffer(4)]],
    constant int* strides [[buffer(5)]],
    constant uint& ndim [[buffer(6)]],
    constant P& params [[buffer(7)]],
    uint2 pos [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  const one_output<F, Out> f{make_functor<F>(params)};
  ternary_strided_row<1, Out, In>(f, out, out, in0, in1, in2, sizes, strides, ndim, pos, grid);
}

// Two outputs of possibly different types from one input (frexp).
template <typename F, typename Out0, typename Out1, typename In, typename P>
kernel void unary_two_outputs_dense(
    device Out0* out0 [[buffer(0)]],
    device Out1* out1 [[buffer(1)]],
    constant In* in [[buffer(2)]],
    constant uint& n [[buffer(3)]],
    constant P& params [[buffer(4)]],
    uint thread_index [[thread_position_in_grid]]) {
  const uint first = first_element<In>(thread_index);
  const uint step = elementwise_tile;
  const uint count = n;
  const F f = make_functor<F>(params);
  In a[per_thread<In>()];
  load_dense(a, in, first, count);
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < per_thread<In>(); ++k) {
    const uint i = first + k * step;
    if (i < count) {
      f(a[k], out0[i], out1[i]);
    }
  }
}

template <typename F, typename Out0, typename Out1, typename In, typename P>
kernel void unary_two_outputs_strided(
    device char* out0 [[buffer(0)]],
    device char* out1 [[buffer(1)]],
    constant char* in [[buffer(2)]],
    constant uint* sizes [[buffer(3)]],
    constant int* strides [[buffer(4)]],
    constant uint& ndim [[buffer(5)]],
    constant P& params [[buffer(6)]],
    uint2 pos [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  int offsets[3];
  row_offsets<3>(pos.y, sizes, strides, ndim, offsets);
  const F f = make_functor<F>(params);
  const uint inner = sizes[0];
  const int stride0 = strides[0];
  const int stride1 = strides[ndim];
  const int stride2 = strides[2 * ndim];
  In a[per_thread<In>()];
  load_row(a, in, offsets[2], stride2, pos.x, grid.x, inner);
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < per_thread<In>(); ++k) {
    const uint x = pos.x + k * grid.x;
    if (x < inner) {
      f(a[k], element_at<Out0>(out0, offsets[0] + int(x) * stride0),
        element_at<Out1>(out1, offsets[1] + int(x) * stride1));
    }
  }
}

// Two outputs from three inputs of one type (prelu's backward: grad_input
// and grad_weight from self, weight and grad_output): f(a, b, c, out0, out1).
template <typename F, typename Out, typename In, typename P>
kernel void ternary_two_outputs_dense(
    device Out* out0 [[buffer(0)]],
    device Out* out1 [[buffer(1)]],
    constant In* in0 [[buffer(2)]],
    constant In* in1 [[buffer(3)]],
    constant In* in2 [[buffer(4)]],
    constant uint& n [[buffer(5)]],
    constant P& params [[buffer(6)]],
    uint thread_index [[thread_position_in_grid]]) {
  const uint first = first_element<In>(thread_index);
  const uint step = elementwise_tile;
  const uint count = n;
  const F f = make_functor<F>(params);
  In a[per_thread<In>()], b[per_thread<In>()], c[per_thread<In>()];
  load_dense(a, in0, first, count);
  load_dense(b, in1, first, count);
  load_dense(c, in2, first, count);
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < per_thread<In>(); ++k) {
    const uint i = first + k * step;
    if (i < count) {
      f(a[k], b[k], c[k], out0[i], out1[i]);
    }
  }
}

template <typename F, typename Out, typename In, typename P>
kernel void ternary_two_outputs_strided(
    device char* out0 [[buffer(0)]],
    device char* out1 [[buffer(1)]],
    constant char* in0 [[buffer(2)]],
    constant char* in1 [[buffer(3)]],
    constant char* in2 [[buffer(4)]],
    constant uint* sizes [[buffer(5)]],
    constant int* strides [[buffer(6)]],
    constant uint& ndim [[buffer(7)]],
    constant P& params [[buffer(8)]],
    uint2 pos [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  const F f = make_functor<F>(params);
  ternary_strided_row<2, Out, In>(f, out0, out1, in0, in1, in2, sizes, strides, ndim, pos, grid);
}

}  // namespace mps_ops

// Every variant the host chooses from, for one (output, input) type pair:
// REGISTER_UNARY_OP(ndtri, float, int) instantiates ndtri_functor as
// ndtri_dense_float_int and ndtri_strided_float_int. The _SAME_TYPE forms
// take one type for both, the shape dtype sets apply (dtype_sets.h):
//   MPS_OPS_FOR_FLOATING(REGISTER_UNARY_OP_SAME_TYPE, logit)
//   MPS_OPS_FOR_NONFLOATING(REGISTER_UNARY_OP, ndtri, float)
#define MPS_OPS_ELEMENTWISE(OP, VARIANT, KERNEL, OUT, IN)                                       \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, VARIANT, OUT, IN), KERNEL, OP##_functor, OUT, IN,  \
                      mps_ops::params_t<OP##_functor>)

#define REGISTER_UNARY_OP(OP, OUT, IN)                              \
  MPS_OPS_ELEMENTWISE(OP, dense, mps_ops::unary_dense, OUT, IN)     \
  MPS_OPS_ELEMENTWISE(OP, strided, mps_ops::unary_strided, OUT, IN)
#define REGISTER_UNARY_OP_SAME_TYPE(OP, T) REGISTER_UNARY_OP(OP, T, T)

#define REGISTER_BINARY_OP(OP, OUT, IN)                                                      \
  MPS_OPS_ELEMENTWISE(OP, dense, mps_ops::binary_dense, OUT, IN)                             \
  MPS_OPS_ELEMENTWISE(OP, dense_lhs_scalar, mps_ops::binary_dense_lhs_scalar, OUT, IN)       \
  MPS_OPS_ELEMENTWISE(OP, dense_rhs_scalar, mps_ops::binary_dense_rhs_scalar, OUT, IN)       \
  MPS_OPS_ELEMENTWISE(OP, strided, mps_ops::binary_strided, OUT, IN)
#define REGISTER_BINARY_OP_SAME_TYPE(OP, T) REGISTER_BINARY_OP(OP, T, T)

// The host name carries the first output's type; the second is fixed per op.
#define REGISTER_UNARY_TWO_OUTPUTS_OP(OP, OUT0, OUT1, IN)                                       \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, dense, OUT0, IN), mps_ops::unary_two_outputs_dense, \
                      OP##_functor, OUT0, OUT1, IN, mps_ops::params_t<OP##_functor>)            \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, strided, OUT0, IN),                                 \
                      mps_ops::unary_two_outputs_strided, OP##_functor, OUT0, OUT1, IN,         \
                      mps_ops::params_t<OP##_functor>)
// The first output of the input's type T.
#define REGISTER_UNARY_TWO_OUTPUTS_OP_SAME_TYPE(OP, OUT1, T) REGISTER_UNARY_TWO_OUTPUTS_OP(OP, T, OUT1, T)

// Three inputs and one output, all of type T.
#define REGISTER_TERNARY_OP_SAME_TYPE(OP, T)                           \
  MPS_OPS_ELEMENTWISE(OP, dense, mps_ops::ternary_dense, T, T)         \
  MPS_OPS_ELEMENTWISE(OP, strided, mps_ops::ternary_strided, T, T)

// Three inputs and two outputs, all of type T.
#define REGISTER_TERNARY_TWO_OUTPUTS_OP_SAME_TYPE(OP, T)                                  \
  MPS_OPS_ELEMENTWISE(OP, dense, mps_ops::ternary_two_outputs_dense, T, T)                \
  MPS_OPS_ELEMENTWISE(OP, strided, mps_ops::ternary_two_outputs_strided, T, T)
