// The metal:: math library for float, half and bfloat, the same on every C++
// target: float calls the target's float function for each name
// (MPS_OPS_FLOAT_MATH from <mps_ops_target/math_primitives.h>: the compiler's
// builtins on the CPU, libdevice on an NVIDIA GPU, whose backend cannot lower
// the builtins; sqrt correctly rounded on both, MPS_OPS_FLOAT_SQRT); half and bfloat compute in float and round once, which is at
// least as accurate as an Apple GPU's precise math (docs/emulator.md lists the
// known differences). The same functions answer as metal::precise:: and
// metal::fast::, except fast::exp, sin and cos: the target's fast ones
// (MPS_OPS_FLOAT_FAST_EXP, _SIN, _COS), as Metal's are on Apple GPUs.
// Targets differ only by their float functions' ulps.
#pragma once

#include <mps_ops_target/math_primitives.h>

namespace metal {
namespace math_impl {

#define MPS_OPS_UNARY_MATH(NAME, FLOAT_FN)                               \
  inline float NAME(float x) { return FLOAT_FN(x); }                         \
  inline half NAME(half x) { return half(FLOAT_FN(float(x))); }              \
  inline bfloat NAME(bfloat x) { return bfloat(FLOAT_FN(float(x))); }

MPS_OPS_UNARY_MATH(exp, MPS_OPS_FLOAT_MATH(exp))
MPS_OPS_UNARY_MATH(exp2, MPS_OPS_FLOAT_MATH(exp2))
MPS_OPS_UNARY_MATH(log, MPS_OPS_FLOAT_MATH(log))
MPS_OPS_UNARY_MATH(log2, MPS_OPS_FLOAT_MATH(log2))
MPS_OPS_UNARY_MATH(log10, MPS_OPS_FLOAT_MATH(log10))
MPS_OPS_UNARY_MATH(sqrt, MPS_OPS_FLOAT_SQRT)
MPS_OPS_UNARY_MATH(sin, MPS_OPS_FLOAT_MATH(sin))
MPS_OPS_UNARY_MATH(cos, MPS_OPS_FLOAT_MATH(cos))
MPS_OPS_UNARY_MATH(tan, MPS_OPS_FLOAT_MATH(tan))
MPS_OPS_UNARY_MATH(sinpi, MPS_OPS_FLOAT_SINPI)
MPS_OPS_UNARY_MATH(cospi, MPS_OPS_FLOAT_COSPI)
MPS_OPS_UNARY_MATH(asin, MPS_OPS_FLOAT_MATH(asin))
MPS_OPS_UNARY_MATH(acos, MPS_OPS_FLOAT_MATH(acos))
MPS_OPS_UNARY_MATH(atan, MPS_OPS_FLOAT_MATH(atan))
MPS_OPS_UNARY_MATH(sinh, MPS_OPS_FLOAT_MATH(sinh))
MPS_OPS_UNARY_MATH(cosh, MPS_OPS_FLOAT_MATH(cosh))
MPS_OPS_UNARY_MATH(tanh, MPS_OPS_FLOAT_MATH(tanh))
MPS_OPS_UNARY_MATH(asinh, MPS_OPS_FLOAT_MATH(asinh))
MPS_OPS_UNARY_MATH(acosh, MPS_OPS_FLOAT_MATH(acosh))
MPS_OPS_UNARY_MATH(atanh, MPS_OPS_FLOAT_MATH(atanh))
MPS_OPS_UNARY_MATH(floor, MPS_OPS_FLOAT_MATH(floor))
MPS_OPS_UNARY_MATH(ceil, MPS_OPS_FLOAT_MATH(ceil))
MPS_OPS_UNARY_MATH(trunc, MPS_OPS_FLOAT_MATH(trunc))
MPS_OPS_UNARY_MATH(round, MPS_OPS_FLOAT_MATH(round))
MPS_OPS_UNARY_MATH(rint, MPS_OPS_FLOAT_MATH(rint))
MPS_OPS_UNARY_MATH(fabs, MPS_OPS_FLOAT_MATH(fabs))
#undef MPS_OPS_UNARY_MATH

inline float exp10(float x) { return MPS_OPS_FLOAT_MATH(pow)(10.0f, x); }
inline float rsqrt(float x) { return 1.0f / MPS_OPS_FLOAT_SQRT(x); }
inline half rsqrt(half x) { return half(rsqrt(float(x))); }
inline float fract(float x) { return MPS_OPS_FLOAT_MATH(fmin)(x - MPS_OPS_FLOAT_MATH(floor)(x), 0x1.fffffep-1f); }

#define MPS_OPS_BINARY_MATH(NAME, FLOAT_FN)                                 \
  inline float NAME(float x, float y) { return FLOAT_FN(x, y); }                \
  inline half NAME(half x, half y) { return half(FLOAT_FN(float(x), float(y))); } \
  inline bfloat NAME(bfloat x, bfloat y) { return bfloat(FLOAT_FN(float(x), float(y))); }

MPS_OPS_BINARY_MATH(pow, MPS_OPS_FLOAT_MATH(pow))
MPS_OPS_BINARY_MATH(powr, MPS_OPS_FLOAT_MATH(pow))
MPS_OPS_BINARY_MATH(atan2, MPS_OPS_FLOAT_MATH(atan2))
MPS_OPS_BINARY_MATH(fmod, MPS_OPS_FLOAT_MATH(fmod))
MPS_OPS_BINARY_MATH(fmin, MPS_OPS_FLOAT_MATH(fmin))
MPS_OPS_BINARY_MATH(fmax, MPS_OPS_FLOAT_MATH(fmax))
MPS_OPS_BINARY_MATH(copysign, MPS_OPS_FLOAT_MATH(copysign))
MPS_OPS_BINARY_MATH(fdim, MPS_OPS_FLOAT_MATH(fdim))
#undef MPS_OPS_BINARY_MATH

inline float fma(float a, float b, float c) { return MPS_OPS_FLOAT_MATH(fma)(a, b, c); }
inline half fma(half a, half b, half c) { return half(MPS_OPS_FLOAT_MATH(fma)(float(a), float(b), float(c))); }

inline float frexp(float x, thread int& exponent) { return MPS_OPS_FLOAT_MATH(frexp)(x, &exponent); }
inline half frexp(half x, thread int& exponent) { return half(MPS_OPS_FLOAT_MATH(frexp)(float(x), &exponent)); }
inline float ldexp(float x, int exponent) { return MPS_OPS_FLOAT_MATH(ldexp)(x, exponent); }
inline half ldexp(half x, int exponent) { return half(MPS_OPS_FLOAT_MATH(ldexp)(float(x), exponent)); }

// Classification and sign: bit tests every backend lowers itself.
inline bool isnan(float x) { return __builtin_isnan(x); }
inline bool isnan(half x) { return __builtin_isnan(float(x)); }
inline bool isnan(bfloat x) { return __builtin_isnan(float(x)); }
inline bool isinf(float x) { return __builtin_isinf(x); }
inline bool isinf(half x) { return __builtin_isinf(float(x)); }
inline bool isinf(bfloat x) { return __builtin_isinf(float(x)); }
inline bool isfinite(float x) { return __builtin_isfinite(x); }
inline bool isfinite(half x) { return __builtin_isfinite(float(x)); }
inline bool isfinite(bfloat x) { return __builtin_isfinite(float(x)); }
inline bool signbit(float x) { return __builtin_signbit(x); }
inline bool signbit(half x) { return __builtin_signbit(float(x)); }
inline bool signbit(bfloat x) { return __builtin_signbit(float(x)); }

#define MPS_OPS_INTEGER_ABS(T) \
  inline T abs(T x) { return x < 0 ? T(-x) : x; }
MPS_OPS_INTEGER_ABS(char)
MPS_OPS_INTEGER_ABS(short)
MPS_OPS_INTEGER_ABS(int)
MPS_OPS_INTEGER_ABS(long)
#undef MPS_OPS_INTEGER_ABS
inline float abs(float x) { return MPS_OPS_FLOAT_MATH(fabs)(x); }
inline half abs(half x) { return half(MPS_OPS_FLOAT_MATH(fabs)(float(x))); }
inline bfloat abs(bfloat x) { return bfloat(MPS_OPS_FLOAT_MATH(fabs)(float(x))); }

template <class T>
T min(T a, T b) { return b < a ? b : a; }
template <class T>
T max(T a, T b) { return a < b ? b : a; }
inline float min(float a, float b) { return MPS_OPS_FLOAT_MATH(fmin)(a, b); }
inline float max(float a, float b) { return MPS_OPS_FLOAT_MATH(fmax)(a, b); }
template <class T>
T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
template <class T>
T select(T a, T b, bool c) { return c ? b : a; }

}  // namespace math_impl

using namespace math_impl;
namespace precise {
using namespace math_impl;
}
namespace fast {
using namespace math_impl;
inline float exp(float x) { return MPS_OPS_FLOAT_FAST_EXP(x); }
inline half exp(half x) { return half(MPS_OPS_FLOAT_FAST_EXP(float(x))); }
inline bfloat exp(bfloat x) { return bfloat(MPS_OPS_FLOAT_FAST_EXP(float(x))); }
inline float sin(float x) { return MPS_OPS_FLOAT_FAST_SIN(x); }
inline half sin(half x) { return half(MPS_OPS_FLOAT_FAST_SIN(float(x))); }
inline bfloat sin(bfloat x) { return bfloat(MPS_OPS_FLOAT_FAST_SIN(float(x))); }
inline float cos(float x) { return MPS_OPS_FLOAT_FAST_COS(x); }
inline half cos(half x) { return half(MPS_OPS_FLOAT_FAST_COS(float(x))); }
inline bfloat cos(bfloat x) { return bfloat(MPS_OPS_FLOAT_FAST_COS(float(x))); }
}

}  // namespace metal
