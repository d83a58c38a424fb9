// _prelu_kernel: x > 0 ? x : weight * x, weight broadcast against x by the
// host's iterator; in float, rounded once (the CPU's half arithmetic rounds
// the product once too). NaN is not > 0: NaN * weight, NaN.
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
using namespace metal;

struct prelu_functor {
  template <typename T>
  T operator()(T x, T weight) const {
    return x > T(0) ? x : T(float(weight) * float(x));
  }
};

MPS_OPS_FOR_FLOATING(REGISTER_BINARY_OP_SAME_TYPE, prelu)

// _prelu_kernel_backward: grad_input = x > 0 ? grad : weight * grad and
// grad_weight = x > 0 ? 0 : x * grad, each rounded once from float, as the
// CPU's kernel computes them (autograd then sums grad_weight to the weight's
// shape). NaN is not > 0: it takes the second branch, NaN * grad.
struct prelu_backward_functor {
  template <typename T>
  void operator()(T x, T weight, T grad, device T& grad_input, device T& grad_weight) const {
    const bool positive = x > T(0);
    grad_input = positive ? grad : T(float(weight) * float(grad));
    grad_weight = positive ? T(0) : T(float(x) * float(grad));
  }
};

MPS_OPS_FOR_FLOATING(REGISTER_TERNARY_TWO_OUTPUTS_OP_SAME_TYPE, prelu_backward)
