// torch._add_relu: self + alpha * other clamped to [0, upper], upper being
// the largest value of self's dtype, as the CPU computes it: floats as one
// fused multiply-add (the CPU's vectorized loop), so a sum past float's range
// saturates at FLT_MAX, and NaN stays NaN (the CPU's vectorized clamp passes
// it; its scalar tail loop alone returns 0). Integers wrap, then clamp: the
// CPU's integer arithmetic. alpha comes as both a float and an integer,
// converted on the host as the CPU converts it.
#include <metal_stdlib>
#include <mps_ops/elementwise.h>

#include "add_relu_params.h"
using namespace metal;

struct add_relu_functor {
  using params = mps_ops::add_relu_params;
  float alpha, upper;
  long integer_alpha, integer_upper;
  explicit add_relu_functor(constant params& p)
      : alpha(p.alpha), upper(p.upper), integer_alpha(p.integer_alpha), integer_upper(p.integer_upper) {}

  float operator()(float a, float b) const {
    const float sum = fma(b, alpha, a);
    if (isnan(sum)) {
      return sum;
    }
    return min(max(sum, 0.0f), upper);
  }
  template <typename T>
  T operator()(T a, T b) const {
    const T sum = T(a + T(integer_alpha) * b);
    const T top = T(integer_upper);
    return sum < T(0) ? T(0) : (sum > top ? top : sum);
  }
};

REGISTER_BINARY_OP_SAME_TYPE(add_relu, char)
REGISTER_BINARY_OP_SAME_TYPE(add_relu, short)
REGISTER_BINARY_OP_SAME_TYPE(add_relu, int)
REGISTER_BINARY_OP_SAME_TYPE(add_relu, long)
REGISTER_BINARY_OP_SAME_TYPE(add_relu, float)
