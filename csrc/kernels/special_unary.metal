// torch.special.ndtri, log_ndtr, airy_ai and erfcx. The math lives in
// include/mps_ops/special_math.h (float precision throughout); integer and
// bool inputs are read as float, as the CPU promotes them.
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
#include <mps_ops/special_math.h>
using namespace metal;

struct ndtri_functor {
  template <typename T>
  float operator()(T x) const {
    return mps_ops::ndtri(float(x));
  }
};

struct log_ndtr_functor {
  template <typename T>
  float operator()(T x) const {
    return mps_ops::log_ndtr(float(x));
  }
};

struct airy_ai_functor {
  template <typename T>
  float operator()(T x) const {
    return mps_ops::airy_ai(float(x));
  }
};

struct erfcx_functor {
  template <typename T>
  float operator()(T x) const {
    return mps_ops::erfcx(float(x));
  }
};

// Every integer input type and float, each read into float.
MPS_OPS_FOR_NONFLOATING(REGISTER_UNARY_OP, ndtri, float)
REGISTER_UNARY_OP(ndtri, float, float)
MPS_OPS_FOR_NONFLOATING(REGISTER_UNARY_OP, log_ndtr, float)
REGISTER_UNARY_OP(log_ndtr, float, float)
MPS_OPS_FOR_NONFLOATING(REGISTER_UNARY_OP, airy_ai, float)
REGISTER_UNARY_OP(airy_ai, float, float)
MPS_OPS_FOR_NONFLOATING(REGISTER_UNARY_OP, erfcx, float)
REGISTER_UNARY_OP(erfcx, float, float)
