// _addmm_activation's epilogue: activation(beta * self + alpha * product),
// self broadcast to the product's shape by the host's iterator and the
// product (mat1 @ mat2) computed before it. One pass instead of addmm's and
// the activation's two. Floats compute in float and round once (the host hands
// half and bfloat16 over as float); a zero beta
// or alpha drops its term, NaN included, as the CPU's BLAS call does. ReLU
// keeps NaN (the CPU's clamp passes it); GELU is the exact (erf) form the
// CPU's gelu_ computes. Integers wrap as the CPU's integer arithmetic does,
// and take ReLU only (the CPU has no integer GELU: the host refuses it).
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
#include <mps_ops/special_math.h>

#include "addmm_activation_params.h"
using namespace metal;

struct addmm_activation_functor {
  using params = mps_ops::addmm_activation_params;
  float beta, alpha;
  long integer_beta, integer_alpha;
  bool use_gelu;
  explicit addmm_activation_functor(constant params& p)
      : beta(p.beta), alpha(p.alpha), integer_beta(p.integer_beta), integer_alpha(p.integer_alpha),
        use_gelu(p.use_gelu) {}

  float floating(float self, float product) const {
    const float x = (beta == 0.0f ? 0.0f : beta * self) + (alpha == 0.0f ? 0.0f : alpha * product);
    if (use_gelu) {
      constexpr float one_over_sqrt2 = 0.7071067811865476f;
      return 0.5f * x * (1.0f + mps_ops::erf(x * one_over_sqrt2));
    }
    return isnan(x) || x > 0.0f ? x : 0.0f;
  }
  // Half and bfloat16 come as float (the host multiplies them in float).
  float operator()(float self, float product) const { return floating(self, product); }
  template <typename T>
  T operator()(T self, T product) const {
    const T x = T(T(integer_beta) * self + T(integer_alpha) * product);
    return x > T(0) ? x : T(0);
  }
};

MPS_OPS_FOR_INTEGRAL(REGISTER_BINARY_OP_SAME_TYPE, addmm_activation)
REGISTER_BINARY_OP_SAME_TYPE(addmm_activation, float)
