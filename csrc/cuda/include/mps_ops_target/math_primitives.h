// The CUDA target's float math for the shared metal:: library
// (mps_ops_msl/metal_math.h): libdevice's __nv_* functions, which clang links
// from the CUDA toolkit (the NVPTX backend cannot lower __builtin_expf and
// friends).
#pragma once

#define MPS_OPS_FLOAT_MATH(NAME) __nv_##NAME##f
// sqrt.rn.f32, correctly rounded as the emulator's: libdevice's __nv_sqrtf is
// sqrt.approx unless __CUDA_PREC_SQRT is reflected on, which clang does not
// do (the H100 comparison with the emulator found std and pdist an ulp off).
#define MPS_OPS_FLOAT_SQRT __nvvm_sqrt_rn_f
// metal::fast::exp: ex2.approx.ftz of x * log2(e), two instructions, where
// __nv_expf's range reduction takes some eight (2 ulp plus the product's
// rounding times |x| log2(e); subnormal results flush to 0). libdevice's
// __nv_fast_expf is the non-ftz ex2.approx, which ptxas wraps in a
// subnormal range check and two conditional multiplies.
__attribute__((__device__)) inline float mps_ops_fast_expf(float x) {
  return __nvvm_ex2_approx_ftz_f(x * 1.44269504088896341f);
}
#define MPS_OPS_FLOAT_FAST_EXP mps_ops_fast_expf
// metal::fast::sin and cos: sin.approx.ftz and cos.approx.ftz, one
// instruction each (absolute error 2**-20.5 over [-pi, pi], PTX ISA; Metal's
// fast sin and cos state a looser bound: callers allow for either).
#define MPS_OPS_FLOAT_FAST_SIN __nvvm_sin_approx_ftz_f
#define MPS_OPS_FLOAT_FAST_COS __nvvm_cos_approx_ftz_f

// metal::sinpi and cospi: libdevice's, whose range reduction is exact and
// cheap (x - rint(2x) / 2), where sin(pi * x) pays the general reduction.
#define MPS_OPS_FLOAT_SINPI __nv_sinpif
#define MPS_OPS_FLOAT_COSPI __nv_cospif

#define MPS_OPS_CUDA_LIBDEVICE_1(NAME) extern "C" __attribute__((__device__)) float __nv_##NAME(float);
#define MPS_OPS_CUDA_LIBDEVICE_2(NAME) \
  extern "C" __attribute__((__device__)) float __nv_##NAME(float, float);
MPS_OPS_CUDA_LIBDEVICE_1(expf)
MPS_OPS_CUDA_LIBDEVICE_1(exp2f)
MPS_OPS_CUDA_LIBDEVICE_1(logf)
MPS_OPS_CUDA_LIBDEVICE_1(log2f)
MPS_OPS_CUDA_LIBDEVICE_1(log10f)
MPS_OPS_CUDA_LIBDEVICE_1(sinf)
MPS_OPS_CUDA_LIBDEVICE_1(cosf)
MPS_OPS_CUDA_LIBDEVICE_1(tanf)
MPS_OPS_CUDA_LIBDEVICE_1(sinpif)
MPS_OPS_CUDA_LIBDEVICE_1(cospif)
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
