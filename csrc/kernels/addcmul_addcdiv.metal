// addcmul and addcdiv, in the CPU's order of operations:
//   addcmul   self + value * t1 * t2    integers in their own arithmetic
//                                       (wrapping, as the CPU's), the
//                                       floating dtypes in float
//   addcdiv   self + value * t1 / t2    floating dtypes only (the CPU refuses
//                                       integer division)
// Half and bfloat16 compute in float and round once, as the CPU's kernels do.
#include <metal_stdlib>
#include <mps_ops/elementwise.h>

#include "addcmul_addcdiv_params.h"
using namespace metal;

struct addcmul_functor {
  using params = mps_ops::pointwise_value_params;
  float real;
  long integer;
  explicit addcmul_functor(constant params& p) : real(p.real), integer(p.integer) {}

  template <typename T>
  T operator()(T self, T t1, T t2) const {
    return T(self + T(integer) * t1 * t2);
  }
  float operator()(float self, float t1, float t2) const { return self + real * t1 * t2; }
  half operator()(half self, half t1, half t2) const {
    return half(float(self) + real * float(t1) * float(t2));
  }
  bfloat operator()(bfloat self, bfloat t1, bfloat t2) const {
    return bfloat(float(self) + real * float(t1) * float(t2));
  }
};

struct addcdiv_functor {
  using params = mps_ops::pointwise_value_params;
  float real;
  explicit addcdiv_functor(constant params& p) : real(p.real) {}

  template <typename T>
  T operator()(T self, T t1, T t2) const {
    return T(float(self) + real * float(t1) / float(t2));
  }
};

MPS_OPS_FOR_INTEGRAL(REGISTER_TERNARY_OP_SAME_TYPE, addcmul)
MPS_OPS_FOR_FLOATING(REGISTER_TERNARY_OP_SAME_TYPE, addcmul)
MPS_OPS_FOR_FLOATING(REGISTER_TERNARY_OP_SAME_TYPE, addcdiv)
