// The emulator's float math for the shared metal:: library
// (mps_ops_msl/metal_math.h): the compiler's builtins, which call the C
// library (correctly rounded or within about an ulp).
#pragma once

#define MPS_OPS_FLOAT_MATH(NAME) __builtin_##NAME##f
#define MPS_OPS_FLOAT_SQRT __builtin_sqrtf  // correctly rounded (IEEE 754)
// metal::fast::exp, sin and cos: the C library's, as precise as metal::exp,
// sin and cos here.
#define MPS_OPS_FLOAT_FAST_EXP __builtin_expf
#define MPS_OPS_FLOAT_FAST_SIN __builtin_sinf
#define MPS_OPS_FLOAT_FAST_COS __builtin_cosf

// metal::sinpi and cospi: sin(pi x) and cos(pi x) with x reduced exactly
// (the C library has neither): r = x - 2 rint(x / 2) lies in [-1, 1] and
// every step is exact, then folded to |r| <= 1/2 (sinpi) or to a quarter turn
// (cospi) by exact subtractions, and evaluated in double. So the zeros and
// ones fall exactly where they should (sinpi(1) = 0, cospi(1/2) = 0), as
// on Apple GPUs and libdevice, where sin(pi * x) in float does not.
inline double mps_ops_half_turns(float x) {
  return double(x) - 2.0 * __builtin_rint(double(x) * 0.5);
}
inline float mps_ops_sinpif(float x) {
  if (!__builtin_isfinite(x)) {
    return x - x;  // NaN, as sin of an infinity
  }
  double r = mps_ops_half_turns(x);
  if (r > 0.5) {
    r = 1.0 - r;
  } else if (r < -0.5) {
    r = -1.0 - r;
  }
  return r == 0.0 ? __builtin_copysignf(0.0f, x) : float(__builtin_sin(3.14159265358979323846 * r));
}
inline float mps_ops_cospif(float x) {
  if (!__builtin_isfinite(x)) {
    return x - x;
  }
  const double a = __builtin_fabs(mps_ops_half_turns(x));
  if (a <= 0.25) {
    return float(__builtin_cos(3.14159265358979323846 * a));
  }
  if (a <= 0.75) {
    return float(__builtin_sin(3.14159265358979323846 * (0.5 - a)));
  }
  return float(-__builtin_cos(3.14159265358979323846 * (1.0 - a)));
}
#define MPS_OPS_FLOAT_SINPI mps_ops_sinpif
#define MPS_OPS_FLOAT_COSPI mps_ops_cospif
