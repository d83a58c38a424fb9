// logspace.out: element i is base ** e_i, where the CPU computes e_i and the
// power in double. Here both are double-float (mps_ops/double_float.h): an
// exponent within 2**-36 of an integer k is taken as k and the power is
// exact binary powering (so integer outputs of integer powers are exact);
// other exponents go through exp2(e * log2(base)) of a double-float product,
// evaluated in double-float for integer outputs and to float accuracy for
// floating ones (emulator, 1e5-point sweeps: relative error <= 7.3e-8 against
// float64, one ulp off the CPU's correctly rounded float in 6%). Integer
// outputs truncate, as the CPU's double-to-integer conversion does, except
// that a result within 2**-36 of an integer is that integer (the CPU's
// correctly rounded pow makes 100 ** 0.5 exactly 10; ours is 10 to about
// 2**-44). Results out of the output type's range are undefined on the CPU
// and here.
#include <metal_stdlib>
#include <mps_ops/double_float.h>
#include <mps_ops/instantiate.h>
#include "logspace_params.h"
using namespace metal;

namespace {

using mps_ops::double_float;

inline double_float load_pair(constant float* pair) {
  return double_float{pair[0], pair[1]};
}

// k when v is within 2**-36 (relative, at most 2**-8) of the integer k. The
// CPU's double exponent of an integer power can miss by a few ulps either
// way. Below 2**62 only, so that k fits a long (the powers of two written in
// decimal).
inline bool near_integer(double_float v, thread long& k) {
  if (!(abs(v.hi) < 4.611686018427388e18f)) {
    return false;
  }
  const float whole = rint(v.hi);
  float fraction = (v.hi - whole) + v.lo;
  const float carry = rint(fraction);
  fraction -= carry;
  if (abs(fraction) > min(1.4551915228366852e-11f * max(1.0f, abs(v.hi)), 0.00390625f)) {
    return false;
  }
  k = long(whole) + long(carry);
  return true;
}

// A negative k powers 1 / base, so that 10 ** -39 does not pass through
// 10 ** 39 (inf in float).
inline double_float integral_power(double_float base, long k) {
  const bool odd = (k & 1) != 0;
  const bool negative_base = base.hi < 0.0f;
  double_float x = negative_base ? mps_ops::df_negate(base) : base;
  if (k < 0) {
    x = mps_ops::df_reciprocal(x);
  }
  double_float result = double_float{1.0f, 0.0f};
  for (ulong n = ulong(k < 0 ? -k : k); n != 0; n >>= 1) {
    if ((n & 1) != 0) {
      result = mps_ops::df_mul(result, x);
    }
    if (n > 1) {
      x = mps_ops::df_mul(x, x);
    }
  }
  return (negative_base && odd) ? mps_ops::df_negate(result) : result;
}

// An integer output truncates the double-float value, so it needs all its
// bits; a floating one rounds to at most float's 24, so 2 ** y is evaluated
// to float accuracy only (mps_ops::exp2_to_float: a tenth of the work).
// Where C++ leaves the CPU's float-to-integer conversion undefined (NaN, an
// infinity, a value past the conversion's range: a negative base's
// fractional power, an overflow) the CPU gives what x86 gives, the
// conversion's "integer indefinite": the lowest value of the 32-bit
// conversion for types of 32 bits or fewer (truncated: 0 for char and
// short), of the 64-bit one for long. (An ARM CPU gives other values; the
// tests compare with x86's.) Left to the conversion, it read uninitialised
// bits.
template <typename T>
struct to_output {
  static T convert(double_float v) {
    const bool wide = sizeof(T) == 8;
    const float limit = wide ? 0x1p63f : 0x1p31f;
    if (!(v.hi >= -limit && v.hi < limit)) {  // NaN too
      return static_cast<T>(wide ? (-9223372036854775807L - 1) : -2147483648L);
    }
    long k = 0;
    return static_cast<T>(near_integer(v, k) ? k : mps_ops::df_trunc_to_long(v));
  }
  static T exp2_of(double_float y) {
    return convert(mps_ops::df_exp2(y));
  }
};
template <typename T>
struct to_float_output {
  static T convert(double_float v) {
    return static_cast<T>(v.hi + v.lo);
  }
  static T exp2_of(double_float y) {
    return static_cast<T>(mps_ops::exp2_to_float(y));
  }
};
template <>
struct to_output<float> : to_float_output<float> {};
template <>
struct to_output<half> : to_float_output<half> {};
template <>
struct to_output<bfloat> : to_float_output<bfloat> {};

template <typename T>
inline T power(constant mps_ops::logspace_params& params, double_float e) {
  const double_float base = load_pair(params.base);
  if (!isfinite(e.hi)) {
    return to_output<T>::convert(double_float{pow(base.hi, e.hi), 0.0f});  // C's special cases: pow(1, nan) = 1, ...
  }
  long k = 0;
  if (near_integer(e, k)) {
    return to_output<T>::convert(integral_power(base, k));
  }
  if (base.hi < 0.0f) {
    return to_output<T>::convert(double_float{numeric_limits<float>::quiet_NaN(), 0.0f});  // negative base, fractional power
  }
  return to_output<T>::exp2_of(mps_ops::df_mul(e, load_pair(params.log2_base)));
}

}  // namespace

template <typename T>
kernel void logspace(
    device T* out [[buffer(0)]],
    constant mps_ops::logspace_params& params [[buffer(1)]],
    uint index [[thread_position_in_grid]]) {
  const long i = long(index);
  const double_float step = load_pair(params.step);
  double_float e;
  if (i < params.halfway) {
    e = mps_ops::df_add(load_pair(params.start), mps_ops::df_mul(step, mps_ops::double_float_from_long(i)));
  } else {
    const double_float back = mps_ops::df_mul(step, mps_ops::double_float_from_long(params.steps - 1 - i));
    e = mps_ops::df_add(load_pair(params.end), mps_ops::df_negate(back));
  }
  out[index] = power<T>(params, e);
}

MPS_OPS_FOR_INTEGRAL(MPS_OPS_INSTANTIATE_FOR_TYPE, logspace, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, logspace, dense)
