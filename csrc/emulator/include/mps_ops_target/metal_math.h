// The metal:: math library for float, half and bfloat. float calls the
// compiler's builtins (correctly rounded or close to it); half and bfloat
// compute in float and round once, which is at least as accurate as an Apple
// GPU's precise math (docs/emulator.md lists the known differences). The same
// functions answer as metal::precise:: and metal::fast::.
#pragma once

namespace metal {
namespace math_impl {

#define MPS_OPS_EMU_UNARY_MATH(NAME, BUILTIN)                               \
  inline float NAME(float x) { return BUILTIN(x); }                         \
  inline half NAME(half x) { return half(BUILTIN(float(x))); }              \
  inline bfloat NAME(bfloat x) { return bfloat(BUILTIN(float(x))); }

MPS_OPS_EMU_UNARY_MATH(exp, __builtin_expf)
MPS_OPS_EMU_UNARY_MATH(exp2, __builtin_exp2f)
MPS_OPS_EMU_UNARY_MATH(log, __builtin_logf)
MPS_OPS_EMU_UNARY_MATH(log2, __builtin_log2f)
MPS_OPS_EMU_UNARY_MATH(log10, __builtin_log10f)
MPS_OPS_EMU_UNARY_MATH(sqrt, __builtin_sqrtf)
MPS_OPS_EMU_UNARY_MATH(sin, __builtin_sinf)
MPS_OPS_EMU_UNARY_MATH(cos, __builtin_cosf)
MPS_OPS_EMU_UNARY_MATH(tan, __builtin_tanf)
MPS_OPS_EMU_UNARY_MATH(asin, __builtin_asinf)
MPS_OPS_EMU_UNARY_MATH(acos, __builtin_acosf)
MPS_OPS_EMU_UNARY_MATH(atan, __builtin_atanf)
MPS_OPS_EMU_UNARY_MATH(sinh, __builtin_sinhf)
MPS_OPS_EMU_UNARY_MATH(cosh, __builtin_coshf)
MPS_OPS_EMU_UNARY_MATH(tanh, __builtin_tanhf)
MPS_OPS_EMU_UNARY_MATH(asinh, __builtin_asinhf)
MPS_OPS_EMU_UNARY_MATH(acosh, __builtin_acoshf)
MPS_OPS_EMU_UNARY_MATH(atanh, __builtin_atanhf)
MPS_OPS_EMU_UNARY_MATH(floor, __builtin_floorf)
MPS_OPS_EMU_UNARY_MATH(ceil, __builtin_ceilf)
MPS_OPS_EMU_UNARY_MATH(trunc, __builtin_truncf)
MPS_OPS_EMU_UNARY_MATH(round, __builtin_roundf)
MPS_OPS_EMU_UNARY_MATH(rint, __builtin_rintf)
MPS_OPS_EMU_UNARY_MATH(fabs, __builtin_fabsf)
#undef MPS_OPS_EMU_UNARY_MATH

inline float exp10(float x) { return __builtin_powf(10.0f, x); }
inline float rsqrt(float x) { return 1.0f / __builtin_sqrtf(x); }
inline half rsqrt(half x) { return half(rsqrt(float(x))); }
inline float fract(float x) { return __builtin_fminf(x - __builtin_floorf(x), 0x1.fffffep-1f); }
inline float sinpi(float x) { return __builtin_sinf(x * 3.14159265358979323846f); }
inline float cospi(float x) { return __builtin_cosf(x * 3.14159265358979323846f); }

#define MPS_OPS_EMU_BINARY_MATH(NAME, BUILTIN)                                 \
  inline float NAME(float x, float y) { return BUILTIN(x, y); }                \
  inline half NAME(half x, half y) { return half(BUILTIN(float(x), float(y))); } \
  inline bfloat NAME(bfloat x, bfloat y) { return bfloat(BUILTIN(float(x), float(y))); }

MPS_OPS_EMU_BINARY_MATH(pow, __builtin_powf)
MPS_OPS_EMU_BINARY_MATH(powr, __builtin_powf)
MPS_OPS_EMU_BINARY_MATH(atan2, __builtin_atan2f)
MPS_OPS_EMU_BINARY_MATH(fmod, __builtin_fmodf)
MPS_OPS_EMU_BINARY_MATH(fmin, __builtin_fminf)
MPS_OPS_EMU_BINARY_MATH(fmax, __builtin_fmaxf)
MPS_OPS_EMU_BINARY_MATH(copysign, __builtin_copysignf)
MPS_OPS_EMU_BINARY_MATH(fdim, __builtin_fdimf)
#undef MPS_OPS_EMU_BINARY_MATH

inline float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline half fma(half a, half b, half c) { return half(__builtin_fmaf(float(a), float(b), float(c))); }

inline float frexp(float x, thread int& exponent) { return __builtin_frexpf(x, &exponent); }
inline half frexp(half x, thread int& exponent) { return half(__builtin_frexpf(float(x), &exponent)); }
inline float ldexp(float x, int exponent) { return __builtin_ldexpf(x, exponent); }
inline half ldexp(half x, int exponent) { return half(__builtin_ldexpf(float(x), exponent)); }

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

#define MPS_OPS_EMU_INTEGER_ABS(T) \
  inline T abs(T x) { return x < 0 ? T(-x) : x; }
MPS_OPS_EMU_INTEGER_ABS(char)
MPS_OPS_EMU_INTEGER_ABS(short)
MPS_OPS_EMU_INTEGER_ABS(int)
MPS_OPS_EMU_INTEGER_ABS(long)
#undef MPS_OPS_EMU_INTEGER_ABS
inline float abs(float x) { return __builtin_fabsf(x); }
inline half abs(half x) { return half(__builtin_fabsf(float(x))); }
inline bfloat abs(bfloat x) { return bfloat(__builtin_fabsf(float(x))); }

template <class T>
T min(T a, T b) { return b < a ? b : a; }
template <class T>
T max(T a, T b) { return a < b ? b : a; }
inline float min(float a, float b) { return __builtin_fminf(a, b); }
inline float max(float a, float b) { return __builtin_fmaxf(a, b); }
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
}

}  // namespace metal
