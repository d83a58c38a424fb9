// The emulator's float math for the shared metal:: library
// (mps_ops_msl/metal_math.h): the compiler's builtins, which call the C
// library (correctly rounded or within about an ulp).
#pragma once

#define MPS_OPS_FLOAT_MATH(NAME) __builtin_##NAME##f
#define MPS_OPS_FLOAT_SQRT __builtin_sqrtf  // correctly rounded (IEEE 754)
// metal::fast::exp: the C library's exp, as precise as metal::exp here.
#define MPS_OPS_FLOAT_FAST_EXP __builtin_expf
