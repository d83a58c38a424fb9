// Scalar type facts shared by all kernels: what precision a functor computes
// in. (Limits the host shares are in shape_limits.h.)
#pragma once
#include <metal_stdlib>

namespace mps_ops {

// half and bfloat compute in float, as the CPU reference does; everything
// else computes in its own type.
template <typename T>
struct opmath {
  using type = T;
};
template <>
struct opmath<half> {
  using type = float;
};
template <>
struct opmath<bfloat> {
  using type = float;
};
template <typename T>
using opmath_t = typename opmath<T>::type;

// The result type of an op that computes integer and bool inputs in float
// (TensorIterator's promote_integer_inputs_to_float): a floating input's
// own type, float for every other.
template <typename T>
struct float_result {
  using type = float;
};
template <>
struct float_result<half> {
  using type = half;
};
template <>
struct float_result<bfloat> {
  using type = bfloat;
};
template <typename T>
using float_result_t = typename float_result<T>::type;

// void where T names a type: for detecting a member type (X<R, void> picks a
// partial specialisation on typename void_if_type<typename R::member>::type).
template <typename T>
struct void_if_type {
  using type = void;
};

}  // namespace mps_ops
