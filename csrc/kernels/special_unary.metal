// torch.special.ndtri, log_ndtr and airy_ai. The math lives in
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

#define REGISTER_SPECIAL_UNARY(T)         \
  REGISTER_UNARY_OP(ndtri, float, T)      \
  REGISTER_UNARY_OP(log_ndtr, float, T)   \
  REGISTER_UNARY_OP(airy_ai, float, T)
REGISTER_SPECIAL_UNARY(bool)
REGISTER_SPECIAL_UNARY(uchar)
REGISTER_SPECIAL_UNARY(char)
REGISTER_SPECIAL_UNARY(short)
REGISTER_SPECIAL_UNARY(int)
REGISTER_SPECIAL_UNARY(long)
REGISTER_SPECIAL_UNARY(ushort)
REGISTER_SPECIAL_UNARY(uint)
REGISTER_SPECIAL_UNARY(ulong)
REGISTER_SPECIAL_UNARY(float)
