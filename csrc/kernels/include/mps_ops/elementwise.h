// Element-wise kernel templates and the macros that instantiate them.
//
// A functor F computes one element: `f(a)` or `f(a, b)` returning the value
// to store, of exactly the output type (functor_result checks it at compile
// time), or for two outputs, `F()(a, out0, out1)` writing both. A functor
// with parameters beyond its operands (add_relu's alpha, logit's eps)
// declares `using params = <struct in params.h>;` and a constructor from
// `constant params&`; every kernel takes a params argument after its
// operands (and after sizes/strides/ndim for strided), no_params for the
// others, so one template serves both. Each REGISTER_*_OP instantiates, for
// one (output dtype, input dtype) pair, the variants the host chooses from
// (csrc/runtime/elementwise.cpp):
//   dense              every operand contiguous in one order: 1-D grid
//   strided            any layout: 2-D grid, x = innermost dim, y = the rest;
//                      strides in bytes; a scalar operand is a 0-stride buffer
//   dense_lhs_scalar,  (binary only) one operand is a single value bound with
//   dense_rhs_scalar   setBytes, the other dense
#pragma once
#include <metal_stdlib>

#include <mps_ops/instantiate.h>
#include <mps_ops/no_params.h>
#include <mps_ops/types.h>

namespace mps_ops {

// F::params where F declares it, else no_params.
template <typename F, typename = void>
struct params_of {
  using type = no_params;
};
template <typename T>
struct void_if_type {
  using type = void;
};
template <typename F>
struct params_of<F, typename void_if_type<typename F::params>::type> {
  using type = typename F::params;
};
template <typename F>
using params_t = typename params_of<F>::type;

// Byte offsets of NOPS operands for a 2-D strided grid position. strides is
// laid out [operand][dim]; dims after the first are decomposed from pos.y.
template <uint NOPS>
inline void strided_offsets(
    uint2 pos,
    constant long* sizes,
    constant long* strides,
    uint ndim,
    thread long* offsets) {
  for (uint op = 0; op < NOPS; ++op) {
    offsets[op] = long(pos.x) * strides[op * ndim];
  }
  long rest = long(pos.y);
  for (uint d = 1; d < ndim; ++d) {
    const long coord = rest % sizes[d];
    rest /= sizes[d];
    for (uint op = 0; op < NOPS; ++op) {
      offsets[op] += coord * strides[op * ndim + d];
    }
  }
}

template <typename T>
inline device T& element_at(device char* base, long offset) {
  return *reinterpret_cast<device T*>(base + offset);
}

template <typename T>
inline T element_at(constant char* base, long offset) {
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

template <typename F, typename Out, typename In, typename P>
kernel void unary_dense(
    device Out* out [[buffer(0)]],
    constant In* in [[buffer(1)]],
    constant P& params [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  const F f = make_functor<F>(params);
  out[index] = functor_result<Out>(f(in[index]));
}

template <typename F, typename Out, typename In, typename P>
kernel void unary_strided(
    device char* out [[buffer(0)]],
    constant char* in [[buffer(1)]],
    constant long* sizes [[buffer(2)]],
    constant long* strides [[buffer(3)]],
    constant uint& ndim [[buffer(4)]],
    constant P& params [[buffer(5)]],
    uint2 pos [[thread_position_in_grid]]) {
  long offsets[2];
  strided_offsets<2>(pos, sizes, strides, ndim, offsets);
  const F f = make_functor<F>(params);
  element_at<Out>(out, offsets[0]) = functor_result<Out>(f(element_at<In>(in, offsets[1])));
}

template <typename F, typename Out, typename In, typename P>
kernel void binary_dense(
    device Out* out [[buffer(0)]],
    constant In* lhs [[buffer(1)]],
    constant In* rhs [[buffer(2)]],
    constant P& params [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  const F f = make_functor<F>(params);
  out[index] = functor_result<Out>(f(lhs[index], rhs[index]));
}

template <typename F, typename Out, typename In, typename P>
kernel void binary_dense_lhs_scalar(
    device Out* out [[buffer(0)]],
    constant In& lhs [[buffer(1)]],
    constant In* rhs [[buffer(2)]],
    constant P& params [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  const F f = make_functor<F>(params);
  out[index] = functor_result<Out>(f(lhs, rhs[index]));
}

template <typename F, typename Out, typename In, typename P>
kernel void binary_dense_rhs_scalar(
    device Out* out [[buffer(0)]],
    constant In* lhs [[buffer(1)]],
    constant In& rhs [[buffer(2)]],
    constant P& params [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  const F f = make_functor<F>(params);
  out[index] = functor_result<Out>(f(lhs[index], rhs));
}

template <typename F, typename Out, typename In, typename P>
kernel void binary_strided(
    device char* out [[buffer(0)]],
    constant char* lhs [[buffer(1)]],
    constant char* rhs [[buffer(2)]],
    constant long* sizes [[buffer(3)]],
    constant long* strides [[buffer(4)]],
    constant uint& ndim [[buffer(5)]],
    constant P& params [[buffer(6)]],
    uint2 pos [[thread_position_in_grid]]) {
  long offsets[3];
  strided_offsets<3>(pos, sizes, strides, ndim, offsets);
  const F f = make_functor<F>(params);
  element_at<Out>(out, offsets[0]) = functor_result<Out>(
      f(element_at<In>(lhs, offsets[1]), element_at<In>(rhs, offsets[2])));
}

// Two outputs of possibly different types from one input (frexp).
template <typename F, typename Out0, typename Out1, typename In, typename P>
kernel void unary_two_outputs_dense(
    device Out0* out0 [[buffer(0)]],
    device Out1* out1 [[buffer(1)]],
    constant In* in [[buffer(2)]],
    constant P& params [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  const F f = make_functor<F>(params);
  f(in[index], out0[index], out1[index]);
}

template <typename F, typename Out0, typename Out1, typename In, typename P>
kernel void unary_two_outputs_strided(
    device char* out0 [[buffer(0)]],
    device char* out1 [[buffer(1)]],
    constant char* in [[buffer(2)]],
    constant long* sizes [[buffer(3)]],
    constant long* strides [[buffer(4)]],
    constant uint& ndim [[buffer(5)]],
    constant P& params [[buffer(6)]],
    uint2 pos [[thread_position_in_grid]]) {
  long offsets[3];
  strided_offsets<3>(pos, sizes, strides, ndim, offsets);
  const F f = make_functor<F>(params);
  f(element_at<In>(in, offsets[2]),
      element_at<Out0>(out0, offsets[0]),
      element_at<Out1>(out1, offsets[1]));
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
