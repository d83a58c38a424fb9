// softplus, its backward, and tanh's backward (the gradient from tanh's
// output). Each computes in float, as the CPU's kernels do for half and
// bfloat (their opmath), and rounds once on return; float inputs take the
// CPU's float steps in its order (MSL has no log1p: log_probability.h's
// log1p_float, one log and one division, as accurate as float allows):
//   softplus(x)                 x * beta > threshold ? x : log1p(exp(x * beta)) / beta
//   softplus_backward(dy, x)    x * beta > threshold ? dy : dy * z / (z + 1), z = exp(x * beta)
//   tanh_backward(dy, y)        dy * (1 - y * y)
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
#include <mps_ops/log_probability.h>

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
    const float z = exp(scaled);
    // log1p_float's correction is inf / inf at z = inf: the CPU's log1p gives inf.
    const float soft = z == numeric_limits<float>::infinity() ? z : mps_ops::log1p_float(z);
    return T(scaled > threshold ? x : soft / beta);
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
