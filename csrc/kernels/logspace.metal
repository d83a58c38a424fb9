// logspace.out: element i is base ** e_i, where the CPU computes e_i and the
// power in double. Here both are double-float (mps_ops/double_float.h): an
// exponent within 2**-36 of an integer k is taken as k and the power is
// exact binary powering (so integer outputs of integer powers are exact);
// other exponents go through exp2(e * log2(base)). Integer outputs truncate,
// as the CPU's double-to-integer conversion does; results out of the
// output type's range are undefined on the CPU and here.
#include <metal_stdlib>
#include <mps_ops/double_float.h>
#include <mps_ops/elementwise.h>
#include <mps_ops/params.h>
using namespace metal;

namespace {

using mps_ops::double_float;

inline double_float load_pair(constant float* pair) {
  return double_float{pair[0], pair[1]};
}

// k when e is within 2**-36 (relative) of the integer k; the CPU's double
// exponent of an integer power can miss by a few ulps either way. Below 2**62
// only, so that k fits a long (both powers written in decimal).
inline bool integral_exponent(double_float e, thread long& k) {
  if (!(abs(e.hi) < 4.611686018427388e18f)) {
    return false;
  }
  const float whole = rint(e.hi);
  float fraction = (e.hi - whole) + e.lo;
  const float carry = rint(fraction);
  fraction -= carry;
  if (abs(fraction) > 1.4551915228366852e-11f * max(1.0f, abs(e.hi))) {
    return false;
  }
  k = long(whole) + long(carry);
  return true;
}

inline double_float integral_power(double_float base, long k) {
  const bool odd = (k & 1) != 0;
  const bool negative_base = base.hi < 0.0f;
  double_float x = negative_base ? mps_ops::df_negate(base) : base;
  double_float result = double_float{1.0f, 0.0f};
  for (ulong n = ulong(k < 0 ? -k : k); n != 0; n >>= 1) {
    if ((n & 1) != 0) {
      result = mps_ops::df_mul(result, x);
    }
    if (n > 1) {
      x = mps_ops::df_mul(x, x);
    }
  }
  if (k < 0) {
    result = mps_ops::df_reciprocal(result);
  }
  return (negative_base && odd) ? mps_ops::df_negate(result) : result;
}

inline double_float power(constant mps_ops::logspace_params& params, double_float e) {
  const double_float base = load_pair(params.base);
  long k = 0;
  if (integral_exponent(e, k)) {
    return integral_power(base, k);
  }
  if (base.hi < 0.0f) {
    return double_float{numeric_limits<float>::quiet_NaN(), 0.0f};  // negative base, fractional power
  }
  const double_float y = mps_ops::df_mul(e, load_pair(params.log2_base));
  const float scale = exp2(y.hi);
  // exp2(y.lo) = 1 + y.lo * ln 2 to within float precision: |y.lo| < 2**-24.
  return mps_ops::df_mul(double_float{scale, 0.0f}, mps_ops::quick_two_sum(1.0f, y.lo * 0.693147180559945309f));
}

template <typename T>
struct to_output {
  static T convert(double_float v) {
    return static_cast<T>(mps_ops::df_trunc_to_long(v));
  }
};
template <typename T>
struct to_float_output {
  static T convert(double_float v) {
    return static_cast<T>(v.hi + v.lo);
  }
};
template <>
struct to_output<float> : to_float_output<float> {};
template <>
struct to_output<half> : to_float_output<half> {};
template <>
struct to_output<bfloat> : to_float_output<bfloat> {};

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
  out[index] = to_output<T>::convert(power(params, e));
}

#define REGISTER_LOGSPACE(T) MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(logspace, dense, T, T), logspace, T)
REGISTER_LOGSPACE(uchar)
REGISTER_LOGSPACE(char)
REGISTER_LOGSPACE(short)
REGISTER_LOGSPACE(int)
REGISTER_LOGSPACE(long)
REGISTER_LOGSPACE(half)
REGISTER_LOGSPACE(bfloat)
REGISTER_LOGSPACE(float)
