// logit(eps): log(x / (1 - x)), x first clamped to [eps, 1 - eps]
// when eps >= 0 (a NaN stays NaN), computed in float for half and bfloat as
// the CPU does. The bounds are float, as torch's CUDA kernel has them; the
// CPU rounds eps and 1 - eps to half or bfloat first (half, eps = 1e-6: its
// hi is 1, so x = 1 gives inf there, 13.8 here; test_outputs.py takes the
// result nearer the float32 one).
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
#include <mps_ops/types.h>

#include "logit_params.h"
using namespace metal;

struct logit_functor {
  using params = mps_ops::logit_params;
  float eps;
  explicit logit_functor(constant params& p) : eps(p.eps) {}

  // Computes in float; a half or bfloat result rounds once, on return.
  template <typename T>
  mps_ops::float_result_t<T> operator()(T in) const {
    float x = float(in);
    if (eps >= 0.0f) {
      const float lo = eps, hi = 1.0f - eps;
      x = x < lo ? lo : (x > hi ? hi : x);
    }
    return mps_ops::float_result_t<T>(log(x / (1.0f - x)));
  }
};

// logit_backward(dy, x) = dy / (x (1 - x)), in float. With eps >= 0: 0
// outside [eps, 1 - eps]; without: NaN outside [0, 1] and dy * inf at 0 and
// 1, as the CPU's kernel gives them.
struct logit_backward_functor {
  using params = mps_ops::logit_params;
  float eps;
  explicit logit_backward_functor(constant params& p) : eps(p.eps) {}

  // One rounding to T at the end (a bfloat conversion is several
  // instructions where the hardware has none).
  template <typename T>
  T operator()(T grad, T in) const {
    const float x = float(in), dy = float(grad);
    const float inside = dy / (x * (1.0f - x));
    float result;
    if (eps >= 0.0f) {
      result = (x < eps || x > 1.0f - eps) ? 0.0f : inside;
    } else if (x < 0.0f || x > 1.0f) {
      result = numeric_limits<float>::quiet_NaN();
    } else {
      result = (x == 0.0f || x == 1.0f) ? dy * numeric_limits<float>::infinity() : inside;
    }
    return T(result);
  }
};

MPS_OPS_FOR_FLOATING(REGISTER_UNARY_OP_SAME_TYPE, logit)
MPS_OPS_FOR_FLOATING(REGISTER_BINARY_OP_SAME_TYPE, logit_backward)
// logit and logit.out: integer and bool inputs give float, as the CPU's do.
MPS_OPS_FOR_NONFLOATING(REGISTER_UNARY_OP, logit, float)
