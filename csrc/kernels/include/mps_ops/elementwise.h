// Element-wise kernel templates and the macros that instantiate them.
//
// A functor F computes one element: `F()(a)`, `F()(a, b)`, `F()(a, b, c)`
// returning the value to store (converted to the output type on store), or
// for two outputs, `F()(a, out0, out1)` writing both. Each REGISTER_*_OP
// instantiates, for one (output dtype, input dtype) pair, the variants the
// host chooses from (csrc/runtime/elementwise.cpp):
//   dense              every operand contiguous in one order: 1-D grid
//   strided            any layout: 2-D grid, x = innermost dim, y = the rest;
//                      strides in bytes; a scalar operand is a 0-stride buffer
//   dense_lhs_scalar,  (binary only) one operand is a single value bound with
//   dense_rhs_scalar   setBytes, the other dense
// Host names follow the one grammar `<op>_<variant>_<out dtype>_<in dtype>`
// with Metal type names; the host builds the same names in host_name.cpp.
#pragma once
#include <metal_stdlib>

#include <mps_ops/types.h>

namespace mps_ops {

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

template <typename F, typename Out, typename In>
kernel void unary_dense(
    device Out* out [[buffer(0)]],
    constant In* in [[buffer(1)]],
    uint index [[thread_position_in_grid]]) {
  out[index] = static_cast<Out>(F()(in[index]));
}

template <typename F, typename Out, typename In>
kernel void unary_strided(
    device char* out [[buffer(0)]],
    constant char* in [[buffer(1)]],
    constant long* sizes [[buffer(2)]],
    constant long* strides [[buffer(3)]],
    constant uint& ndim [[buffer(4)]],
    uint2 pos [[thread_position_in_grid]]) {
  long offsets[2];
  strided_offsets<2>(pos, sizes, strides, ndim, offsets);
  element_at<Out>(out, offsets[0]) = static_cast<Out>(F()(element_at<In>(in, offsets[1])));
}

template <typename F, typename Out, typename In>
kernel void binary_dense(
    device Out* out [[buffer(0)]],
    constant In* lhs [[buffer(1)]],
    constant In* rhs [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  out[index] = static_cast<Out>(F()(lhs[index], rhs[index]));
}

template <typename F, typename Out, typename In>
kernel void binary_dense_lhs_scalar(
    device Out* out [[buffer(0)]],
    constant In& lhs [[buffer(1)]],
    constant In* rhs [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  out[index] = static_cast<Out>(F()(lhs, rhs[index]));
}

template <typename F, typename Out, typename In>
kernel void binary_dense_rhs_scalar(
    device Out* out [[buffer(0)]],
    constant In* lhs [[buffer(1)]],
    constant In& rhs [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  out[index] = static_cast<Out>(F()(lhs[index], rhs));
}

template <typename F, typename Out, typename In>
kernel void binary_strided(
    device char* out [[buffer(0)]],
    constant char* lhs [[buffer(1)]],
    constant char* rhs [[buffer(2)]],
    constant long* sizes [[buffer(3)]],
    constant long* strides [[buffer(4)]],
    constant uint& ndim [[buffer(5)]],
    uint2 pos [[thread_position_in_grid]]) {
  long offsets[3];
  strided_offsets<3>(pos, sizes, strides, ndim, offsets);
  element_at<Out>(out, offsets[0]) = static_cast<Out>(
      F()(element_at<In>(lhs, offsets[1]), element_at<In>(rhs, offsets[2])));
}

// Unary ops with parameters (logit's eps): as the binary ones below.
template <typename F, typename Out, typename In>
kernel void unary_dense_params(
    device Out* out [[buffer(0)]],
    constant In* in [[buffer(1)]],
    constant typename F::params& params [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  const F f(params);
  out[index] = static_cast<Out>(f(in[index]));
}

template <typename F, typename Out, typename In>
kernel void unary_strided_params(
    device char* out [[buffer(0)]],
    constant char* in [[buffer(1)]],
    constant long* sizes [[buffer(2)]],
    constant long* strides [[buffer(3)]],
    constant uint& ndim [[buffer(4)]],
    constant typename F::params& params [[buffer(5)]],
    uint2 pos [[thread_position_in_grid]]) {
  long offsets[2];
  strided_offsets<2>(pos, sizes, strides, ndim, offsets);
  const F f(params);
  element_at<Out>(out, offsets[0]) = static_cast<Out>(f(element_at<In>(in, offsets[1])));
}

// Binary ops with parameters beyond their operands (add_relu's alpha): the
// functor is built from a `constant typename F::params&` bound after the
// operands (and, for strided, after sizes/strides/ndim). Same variants and
// host names as the parameterless kernels.
template <typename F, typename Out, typename In>
kernel void binary_dense_params(
    device Out* out [[buffer(0)]],
    constant In* lhs [[buffer(1)]],
    constant In* rhs [[buffer(2)]],
    constant typename F::params& params [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  const F f(params);
  out[index] = static_cast<Out>(f(lhs[index], rhs[index]));
}

template <typename F, typename Out, typename In>
kernel void binary_dense_lhs_scalar_params(
    device Out* out [[buffer(0)]],
    constant In& lhs [[buffer(1)]],
    constant In* rhs [[buffer(2)]],
    constant typename F::params& params [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  const F f(params);
  out[index] = static_cast<Out>(f(lhs, rhs[index]));
}

template <typename F, typename Out, typename In>
kernel void binary_dense_rhs_scalar_params(
    device Out* out [[buffer(0)]],
    constant In* lhs [[buffer(1)]],
    constant In& rhs [[buffer(2)]],
    constant typename F::params& params [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  const F f(params);
  out[index] = static_cast<Out>(f(lhs[index], rhs));
}

template <typename F, typename Out, typename In>
kernel void binary_strided_params(
    device char* out [[buffer(0)]],
    constant char* lhs [[buffer(1)]],
    constant char* rhs [[buffer(2)]],
    constant long* sizes [[buffer(3)]],
    constant long* strides [[buffer(4)]],
    constant uint& ndim [[buffer(5)]],
    constant typename F::params& params [[buffer(6)]],
    uint2 pos [[thread_position_in_grid]]) {
  long offsets[3];
  strided_offsets<3>(pos, sizes, strides, ndim, offsets);
  const F f(params);
  element_at<Out>(out, offsets[0]) = static_cast<Out>(
      f(element_at<In>(lhs, offsets[1]), element_at<In>(rhs, offsets[2])));
}

// Two outputs of possibly different types from one input (frexp).
template <typename F, typename Out0, typename Out1, typename In>
kernel void unary_two_outputs_dense(
    device Out0* out0 [[buffer(0)]],
    device Out1* out1 [[buffer(1)]],
    constant In* in [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  F()(in[index], out0[index], out1[index]);
}

template <typename F, typename Out0, typename Out1, typename In>
kernel void unary_two_outputs_strided(
    device char* out0 [[buffer(0)]],
    device char* out1 [[buffer(1)]],
    constant char* in [[buffer(2)]],
    constant long* sizes [[buffer(3)]],
    constant long* strides [[buffer(4)]],
    constant uint& ndim [[buffer(5)]],
    uint2 pos [[thread_position_in_grid]]) {
  long offsets[3];
  strided_offsets<3>(pos, sizes, strides, ndim, offsets);
  F()(element_at<In>(in, offsets[2]),
      element_at<Out0>(out0, offsets[0]),
      element_at<Out1>(out1, offsets[1]));
}

}  // namespace mps_ops

#define MPS_OPS_INSTANTIATE(HOST_NAME, KERNEL, ...) \
  template [[host_name(HOST_NAME)]] [[kernel]] decltype(KERNEL<__VA_ARGS__>) KERNEL<__VA_ARGS__>;

#define MPS_OPS_HOST_NAME(OP, VARIANT, OUT, IN) #OP "_" #VARIANT "_" #OUT "_" #IN

#define REGISTER_UNARY_OP(OP, OUT, IN)                                                          \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, dense, OUT, IN), mps_ops::unary_dense,              \
                      OP##_functor, OUT, IN)                                                    \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, strided, OUT, IN), mps_ops::unary_strided,          \
                      OP##_functor, OUT, IN)

#define REGISTER_UNARY_OP_WITH_PARAMS(OP, OUT, IN)                                             \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, dense, OUT, IN), mps_ops::unary_dense_params,       \
                      OP##_functor, OUT, IN)                                                    \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, strided, OUT, IN), mps_ops::unary_strided_params,   \
                      OP##_functor, OUT, IN)

#define REGISTER_BINARY_OP(OP, OUT, IN)                                                         \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, dense, OUT, IN), mps_ops::binary_dense,             \
                      OP##_functor, OUT, IN)                                                    \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, dense_lhs_scalar, OUT, IN),                         \
                      mps_ops::binary_dense_lhs_scalar, OP##_functor, OUT, IN)                  \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, dense_rhs_scalar, OUT, IN),                         \
                      mps_ops::binary_dense_rhs_scalar, OP##_functor, OUT, IN)                  \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, strided, OUT, IN), mps_ops::binary_strided,         \
                      OP##_functor, OUT, IN)

#define REGISTER_BINARY_OP_WITH_PARAMS(OP, OUT, IN)                                            \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, dense, OUT, IN), mps_ops::binary_dense_params,      \
                      OP##_functor, OUT, IN)                                                    \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, dense_lhs_scalar, OUT, IN),                         \
                      mps_ops::binary_dense_lhs_scalar_params, OP##_functor, OUT, IN)           \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, dense_rhs_scalar, OUT, IN),                         \
                      mps_ops::binary_dense_rhs_scalar_params, OP##_functor, OUT, IN)           \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, strided, OUT, IN), mps_ops::binary_strided_params,  \
                      OP##_functor, OUT, IN)

// The host name carries the first output's type; the second is fixed per op.
#define REGISTER_UNARY_TWO_OUTPUTS_OP(OP, OUT0, OUT1, IN)                                       \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, dense, OUT0, IN), mps_ops::unary_two_outputs_dense, \
                      OP##_functor, OUT0, OUT1, IN)                                             \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, strided, OUT0, IN),                                 \
                      mps_ops::unary_two_outputs_strided, OP##_functor, OUT0, OUT1, IN)
