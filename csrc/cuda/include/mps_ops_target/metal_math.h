// The metal:: math library on the GPU: float through libdevice (__nv_*,
// linked by clang from the CUDA toolkit), half and bfloat computed in float
// and rounded once, as the emulator's metal_math.h does with the C library.
// Its own header because the emulator's calls __builtin_expf and friends,
// which the NVPTX backend cannot lower. The formulas (exp10 as a power,
// rsqrt as 1/sqrt, sinpi as sin(x*pi), ...) are the emulator's, so the two
// targets differ only by libdevice against libm ulps.
#pragma once

#define MPS_OPS_CUDA_LIBDEVICE_1(NAME) extern "C" __attribute__((__device__)) float __nv_##NAME(float);
#define MPS_OPS_CUDA_LIBDEVICE_2(NAME) \
  extern "C" __attribute__((__device__)) float __nv_##NAME(float, float);
MPS_OPS_CUDA_LIBDEVICE_1(expf)
MPS_OPS_CUDA_LIBDEVICE_1(exp2f)
MPS_OPS_CUDA_LIBDEVICE_1(logf)
MPS_OPS_CUDA_LIBDEVICE_1(log2f)
MPS_OPS_CUDA_LIBDEVICE_1(log10f)
MPS_OPS_CUDA_LIBDEVICE_1(sqrtf)
MPS_OPS_CUDA_LIBDEVICE_1(sinf)
MPS_OPS_CUDA_LIBDEVICE_1(cosf)
MPS_OPS_CUDA_LIBDEVICE_1(tanf)
MPS_OPS_CUDA_LIBDEVICE_1(asinf)
MPS_OPS_CUDA_LIBDEVICE_1(acosf)
MPS_OPS_CUDA_LIBDEVICE_1(atanf)
MPS_OPS_CUDA_LIBDEVICE_1(sinhf)
MPS_OPS_CUDA_LIBDEVICE_1(coshf)
MPS_OPS_CUDA_LIBDEVICE_1(tanhf)
MPS_OPS_CUDA_LIBDEVICE_1(asinhf)
MPS_OPS_CUDA_LIBDEVICE_1(acoshf)
MPS_OPS_CUDA_LIBDEVICE_1(atanhf)
MPS_OPS_CUDA_LIBDEVICE_1(floorf)
MPS_OPS_CUDA_LIBDEVICE_1(ceilf)
MPS_OPS_CUDA_LIBDEVICE_1(truncf)
MPS_OPS_CUDA_LIBDEVICE_1(roundf)
MPS_OPS_CUDA_LIBDEVICE_1(rintf)
MPS_OPS_CUDA_LIBDEVICE_1(fabsf)
MPS_OPS_CUDA_LIBDEVICE_2(powf)
MPS_OPS_CUDA_LIBDEVICE_2(atan2f)
MPS_OPS_CUDA_LIBDEVICE_2(fmodf)
MPS_OPS_CUDA_LIBDEVICE_2(fminf)
MPS_OPS_CUDA_LIBDEVICE_2(fmaxf)
MPS_OPS_CUDA_LIBDEVICE_2(copysignf)
MPS_OPS_CUDA_LIBDEVICE_2(fdimf)
#undef MPS_OPS_CUDA_LIBDEVICE_1
#undef MPS_OPS_CUDA_LIBDEVICE_2
extern "C" __attribute__((__device__)) float __nv_fmaf(float, float, float);
extern "C" __attribute__((__device__)) float __nv_frexpf(float, int*);
extern "C" __attribute__((__device__)) float __nv_ldexpf(float, int);

namespace metal {
namespace math_impl {

#define MPS_OPS_CUDA_UNARY_MATH(NAME, FLOAT_FN)                              \
  inline float NAME(float x) { return FLOAT_FN(x); }                         \
  inline half NAME(half x) { return half(FLOAT_FN(float(x))); }              \
  inline bfloat NAME(bfloat x) { return bfloat(FLOAT_FN(float(x))); }

MPS_OPS_CUDA_UNARY_MATH(exp, __nv_expf)
MPS_OPS_CUDA_UNARY_MATH(exp2, __nv_exp2f)
MPS_OPS_CUDA_UNARY_MATH(log, __nv_logf)
MPS_OPS_CUDA_UNARY_MATH(log2, __nv_log2f)
MPS_OPS_CUDA_UNARY_MATH(log10, __nv_log10f)
MPS_OPS_CUDA_UNARY_MATH(sqrt, __nv_sqrtf)
MPS_OPS_CUDA_UNARY_MATH(sin, __nv_sinf)
MPS_OPS_CUDA_UNARY_MATH(cos, __nv_cosf)
MPS_OPS_CUDA_UNARY_MATH(tan, __nv_tanf)
MPS_OPS_CUDA_UNARY_MATH(asin, __nv_asinf)
MPS_OPS_CUDA_UNARY_MATH(acos, __nv_acosf)
MPS_OPS_CUDA_UNARY_MATH(atan, __nv_atanf)
MPS_OPS_CUDA_UNARY_MATH(sinh, __nv_sinhf)
MPS_OPS_CUDA_UNARY_MATH(cosh, __nv_coshf)
MPS_OPS_CUDA_UNARY_MATH(tanh, __nv_tanhf)
MPS_OPS_CUDA_UNARY_MATH(asinh, __nv_asinhf)
MPS_OPS_CUDA_UNARY_MATH(acosh, __nv_acoshf)
MPS_OPS_CUDA_UNARY_MATH(atanh, __nv_atanhf)
MPS_OPS_CUDA_UNARY_MATH(floor, __nv_floorf)
MPS_OPS_CUDA_UNARY_MATH(ceil, __nv_ceilf)
MPS_OPS_CUDA_UNARY_MATH(trunc, __nv_truncf)
MPS_OPS_CUDA_UNARY_MATH(round, __nv_roundf)
MPS_OPS_CUDA_UNARY_MATH(rint, __nv_rintf)
MPS_OPS_CUDA_UNARY_MATH(fabs, __nv_fabsf)
#undef MPS_OPS_CUDA_UNARY_MATH

inline float exp10(float x) { return __nv_powf(10.0f, x); }
inline float rsqrt(float x) { return 1.0f / __nv_sqrtf(x); }
inline half rsqrt(half x) { return half(rsqrt(float(x))); }
inline float fract(float x) { return __nv_fminf(x - __nv_floorf(x), 0x1.fffffep-1f); }
inline float sinpi(float x) { return __nv_sinf(x * 3.14159265358979323846f); }
inline float cospi(float x) { return __nv_cosf(x * 3.14159265358979323846f); }

#define MPS_OPS_CUDA_BINARY_MATH(NAME, FLOAT_FN)                                  \
  inline float NAME(float x, float y) { return FLOAT_FN(x, y); }                  \
  inline half NAME(half x, half y) { return half(FLOAT_FN(float(x), float(y))); } \
  inline bfloat NAME(bfloat x, bfloat y) { return bfloat(FLOAT_FN(float(x), float(y))); }

MPS_OPS_CUDA_BINARY_MATH(pow, __nv_powf)
MPS_OPS_CUDA_BINARY_MATH(powr, __nv_powf)
MPS_OPS_CUDA_BINARY_MATH(atan2, __nv_atan2f)
MPS_OPS_CUDA_BINARY_MATH(fmod, __nv_fmodf)
MPS_OPS_CUDA_BINARY_MATH(fmin, __nv_fminf)
MPS_OPS_CUDA_BINARY_MATH(fmax, __nv_fmaxf)
MPS_OPS_CUDA_BINARY_MATH(copysign, __nv_copysignf)
MPS_OPS_CUDA_BINARY_MATH(fdim, __nv_fdimf)
#undef MPS_OPS_CUDA_BINARY_MATH

inline float fma(float a, float b, float c) { return __nv_fmaf(a, b, c); }
inline half fma(half a, half b, half c) { return half(__nv_fmaf(float(a), float(b), float(c))); }

inline float frexp(float x, thread int& exponent) { return __nv_frexpf(x, &exponent); }
inline half frexp(half x, thread int& exponent) { return half(__nv_frexpf(float(x), &exponent)); }
inline float ldexp(float x, int exponent) { return __nv_ldexpf(x, exponent); }
inline half ldexp(half x, int exponent) { return half(__nv_ldexpf(float(x), exponent)); }

// Classification and sign: bit tests, which the NVPTX backend lowers itself.
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

#define MPS_OPS_CUDA_INTEGER_ABS(T) \
  inline T abs(T x) { return x < 0 ? T(-x) : x; }
MPS_OPS_CUDA_INTEGER_ABS(char)
MPS_OPS_CUDA_INTEGER_ABS(short)
MPS_OPS_CUDA_INTEGER_ABS(int)
MPS_OPS_CUDA_INTEGER_ABS(long)
#undef MPS_OPS_CUDA_INTEGER_ABS
inline float abs(float x) { return __nv_fabsf(x); }
inline half abs(half x) { return half(__nv_fabsf(float(x))); }
inline bfloat abs(bfloat x) { return bfloat(__nv_fabsf(float(x))); }

template <class T>
T min(T a, T b) { return b < a ? b : a; }
template <class T>
T max(T a, T b) { return a < b ? b : a; }
inline float min(float a, float b) { return __nv_fminf(a, b); }
inline float max(float a, float b) { return __nv_fmaxf(a, b); }
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
