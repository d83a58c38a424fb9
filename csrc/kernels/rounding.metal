// floor, ceil, trunc and frac (x - trunc(x)). Each is exact in every
// floating type (frac's difference is representable), so half and bfloat
// round through float, which holds them exactly. Integers are whole already:
// floor, ceil and trunc return them as they are (the CPU has no integer
// frac). NaN and the infinities pass through; frac of an infinity is NaN
// (inf - inf), as on the CPU.
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
using namespace metal;

// A rounding of float (Round::of) for every kernel type: integers unchanged.
template <typename Round>
struct rounding {
  template <typename T>
  T operator()(T x) const {
    return x;
  }
  float operator()(float x) const { return Round::of(x); }
  half operator()(half x) const { return half(Round::of(float(x))); }
  bfloat operator()(bfloat x) const { return bfloat(Round::of(float(x))); }
};

struct floor_of {
  static float of(float x) { return floor(x); }
};
struct ceil_of {
  static float of(float x) { return ceil(x); }
};
struct trunc_of {
  static float of(float x) { return trunc(x); }
};
struct frac_of {
  static float of(float x) { return x - trunc(x); }
};

using floor_functor = rounding<floor_of>;
using ceil_functor = rounding<ceil_of>;
using trunc_functor = rounding<trunc_of>;
using frac_functor = rounding<frac_of>;

MPS_OPS_FOR_INTEGRAL(REGISTER_UNARY_OP_SAME_TYPE, floor)
MPS_OPS_FOR_WIDE_UNSIGNED(REGISTER_UNARY_OP_SAME_TYPE, floor)
MPS_OPS_FOR_FLOATING(REGISTER_UNARY_OP_SAME_TYPE, floor)
MPS_OPS_FOR_INTEGRAL(REGISTER_UNARY_OP_SAME_TYPE, ceil)
MPS_OPS_FOR_WIDE_UNSIGNED(REGISTER_UNARY_OP_SAME_TYPE, ceil)
MPS_OPS_FOR_FLOATING(REGISTER_UNARY_OP_SAME_TYPE, ceil)
MPS_OPS_FOR_INTEGRAL(REGISTER_UNARY_OP_SAME_TYPE, trunc)
MPS_OPS_FOR_WIDE_UNSIGNED(REGISTER_UNARY_OP_SAME_TYPE, trunc)
MPS_OPS_FOR_FLOATING(REGISTER_UNARY_OP_SAME_TYPE, trunc)
MPS_OPS_FOR_FLOATING(REGISTER_UNARY_OP_SAME_TYPE, frac)
