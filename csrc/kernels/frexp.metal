// torch.frexp: x = mantissa * 2^exponent with |mantissa| in [0.5, 1).
// Zeros, infinities and NaN come back as the mantissa with exponent 0, as the
// CPU's std::frexp gives them; spelled out because MSL leaves them unspecified.
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
using namespace metal;

struct frexp_functor {
  template <typename T>
  void operator()(T x, device T& mantissa, device int& exponent) const {
    const float value = float(x);
    if (value == 0.0f || !isfinite(value)) {
      mantissa = x;
      exponent = 0;
      return;
    }
    int e;
    // half and bfloat mantissas are exact in float and back: frexp only
    // rescales by a power of two.
    mantissa = T(frexp(value, e));
    exponent = e;
  }
};

// Mantissa in the input's type, exponent int.
MPS_OPS_FOR_FLOATING(REGISTER_UNARY_TWO_OUTPUTS_OP_SAME_TYPE, frexp, int)
