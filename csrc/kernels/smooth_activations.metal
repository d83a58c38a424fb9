// softplus, its backward, and tanh's backward (the gradient from tanh's
// output). Each computes in float, as the CPU's kernels do for half and
// bfloat (their opmath), and rounds once on return; float inputs take the
// CPU's float steps in its order (log1p: special_math.h's, MSL has none):
//   softplus(x)                 x * beta > threshold ? x : log1p(exp(x * beta)) / beta
//   softplus_backward(dy, x)    x * beta > threshold ? dy : dy * z / (z + 1), z = exp(x * beta)
//   tanh_backward(dy, y)        dy * (1 - y * y)
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
#include <mps_ops/special_math.h>

#include "smooth_activations_params.h"
using namespace metal;

struct softplus_functor {
  using params = mps_ops::softplus_params;
  float beta, threshold;
  explicit softplus_functor(constant params& p) : beta(p.beta), threshold(p.threshold) {}

  template <typename T>
  T operator()(T in) const {
    const float x = float(in);
    const float scaled = x * beta;
    return T(scaled > threshold ? x : mps_ops::log1p(exp(scaled)) / beta);
  }
};

struct softplus_backward_functor {
  using params = mps_ops::softplus_params;
  float beta, threshold;
  explicit softplus_backward_functor(constant params& p) : beta(p.beta), threshold(p.threshold) {}

  template <typename T>
  T operator()(T grad, T in) const {
    const float scaled = float(in) * beta;
    const float z = exp(scaled);
    return scaled > threshold ? grad : T(float(grad) * z / (z + 1.0f));
  }
};

struct tanh_backward_functor {
  template <typename T>
  T operator()(T grad, T y) const {
    const float out = float(y);
    return T(float(grad) * (1.0f - out * out));
  }
};

MPS_OPS_FOR_FLOATING(REGISTER_UNARY_OP_SAME_TYPE, softplus)
MPS_OPS_FOR_FLOATING(REGISTER_BINARY_OP_SAME_TYPE, softplus_backward)
MPS_OPS_FOR_FLOATING(REGISTER_BINARY_OP_SAME_TYPE, tanh_backward)
