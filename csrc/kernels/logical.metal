// logical_and, logical_or, logical_xor: each operand is true where it is
// nonzero (NaN included, as the CPU reads it), the result a bool, or 0 and 1
// in the operands' type.
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
using namespace metal;

struct logical_and_functor {
  template <typename T>
  bool operator()(T a, T b) const {
    return a != T(0) && b != T(0);
  }
};

struct logical_or_functor {
  template <typename T>
  bool operator()(T a, T b) const {
    return a != T(0) || b != T(0);
  }
};

struct logical_xor_functor {
  template <typename T>
  bool operator()(T a, T b) const {
    return (a != T(0)) != (b != T(0));
  }
};

// The same result written as 0 or 1 in the operands' own type: an out (an
// in-place self) of that dtype in one pass.
template <typename F>
struct into_operand_type {
  template <typename T>
  T operator()(T a, T b) const {
    return T(F()(a, b) ? 1 : 0);
  }
};

// Every variant of a bool result, and for each other dtype T one into T.
#define REGISTER_LOGICAL_INTO(OP, T)                                                                        \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, dense, T, T), mps_ops::binary_dense,                            \
                      into_operand_type<OP##_functor>, T, T, mps_ops::no_params)                           \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, dense_lhs_scalar, T, T), mps_ops::binary_dense_lhs_scalar,      \
                      into_operand_type<OP##_functor>, T, T, mps_ops::no_params)                           \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, dense_rhs_scalar, T, T), mps_ops::binary_dense_rhs_scalar,      \
                      into_operand_type<OP##_functor>, T, T, mps_ops::no_params)                           \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, strided, T, T), mps_ops::binary_strided,                        \
                      into_operand_type<OP##_functor>, T, T, mps_ops::no_params)
#define REGISTER_LOGICAL(OP)                           \
  MPS_OPS_FOR_ALL(REGISTER_BINARY_OP, OP, bool)        \
  MPS_OPS_FOR_INTEGRAL(REGISTER_LOGICAL_INTO, OP)      \
  MPS_OPS_FOR_WIDE_UNSIGNED(REGISTER_LOGICAL_INTO, OP) \
  MPS_OPS_FOR_FLOATING(REGISTER_LOGICAL_INTO, OP)

REGISTER_LOGICAL(logical_and)
REGISTER_LOGICAL(logical_or)
REGISTER_LOGICAL(logical_xor)
