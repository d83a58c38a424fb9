// Double-float arithmetic: a value carried as an unevaluated sum hi + lo of
// two floats (about 48 significant bits), for the few kernels that must
// reproduce a result the CPU computes in double (Metal has no double). The
// error-free transformations rely on fast math being off (tools/macos_build.py
// passes -fno-fast-math; the emulator builds with -ffp-contract=off) and on
// fma being fused, as Metal specifies.
#pragma once
#include <metal_stdlib>

namespace mps_ops {

struct double_float {
  float hi;
  float lo;
};

// Exact for any long below 2**48 in magnitude.
inline double_float double_float_from_long(long value) {
  const float hi = float(value);
  return double_float{hi, float(value - long(hi))};
}

// a + b exactly, when |a| >= |b| or a is zero.
inline double_float quick_two_sum(float a, float b) {
  const float sum = a + b;
  return double_float{sum, b - (sum - a)};
}

inline double_float df_add(double_float a, double_float b) {
  const float sum = a.hi + b.hi;
  if (!metal::isfinite(sum)) {
    return double_float{sum, 0.0f};
  }
  const float b_virtual = sum - a.hi;
  const float error = (a.hi - (sum - b_virtual)) + (b.hi - b_virtual);
  return quick_two_sum(sum, error + a.lo + b.lo);
}

// a + b exactly (TwoSum: no condition on the magnitudes).
inline double_float two_sum(float a, float b) {
  const float sum = a + b;
  const float b_virtual = sum - a;
  return double_float{sum, (a - (sum - b_virtual)) + (b - b_virtual)};
}

// A thread's running sum of many floats, each addition's rounding error
// carried apart and added up (Ogita, Rump and Oishi's Sum2): as accurate as
// a double-float sum, at TwoSum's six operations per term where df_add
// renormalises and tests for infinities at every term. An infinite or NaN
// sum is the value (its errors are NaN).
struct compensated_sum {
  float sum;
  float errors;
  static compensated_sum zero() { return compensated_sum{0.0f, 0.0f}; }
  void add(float term) {
    const double_float exact = two_sum(sum, term);
    sum = exact.hi;
    errors += exact.lo;
  }
  double_float value() const {
    if (!metal::isfinite(sum)) {
      return double_float{sum, 0.0f};
    }
    return two_sum(sum, errors);
  }
};

// A sum reducer in double-float (reduction.h's merges), for row sums whose
// float rounding would depend on the order of the terms (softmax's
// backwards). The low parts are added first, so merge(a, b) and merge(b, a)
// give the same bits (TwoSum's error is exact either way) and every lane of
// a shuffle merge agrees.
struct double_float_sum {
  using state = double_float;
  static state identity() { return double_float{0.0f, 0.0f}; }
  static state merge(state a, state b) { return df_add(double_float{a.hi, 0.0f}, double_float{b.hi, a.lo + b.lo}); }
  static state shuffle_xor(state s, ushort mask) {
    return double_float{metal::simd_shuffle_xor(s.hi, mask), metal::simd_shuffle_xor(s.lo, mask)};
  }
};

inline double_float df_negate(double_float a) {
  return double_float{-a.hi, -a.lo};
}

inline double_float df_mul(double_float a, double_float b) {
  const float product = a.hi * b.hi;
  if (!metal::isfinite(product) || product == 0.0f) {
    return double_float{product, 0.0f};
  }
  const float error = metal::fma(a.hi, b.hi, -product) + (a.hi * b.lo + a.lo * b.hi);
  return quick_two_sum(product, error);
}

inline double_float df_reciprocal(double_float a) {
  const float first = 1.0f / a.hi;
  if (!metal::isfinite(first) || first == 0.0f) {
    return double_float{first, 0.0f};
  }
  // One Newton step on the residual 1 - a * first.
  const double_float residual = df_add(double_float{1.0f, 0.0f}, df_negate(df_mul(a, double_float{first, 0.0f})));
  return quick_two_sum(first, residual.hi * first);
}

// a / k for a small whole k: the first quotient's exact residual (fma) gives
// the second.
inline double_float df_divide(double_float a, float k) {
  const float quotient = a.hi / k;
  const float residual = metal::fma(-quotient, k, a.hi) + a.lo;
  return quick_two_sum(quotient, residual / k);
}

// 2**y to double-float accuracy: 2**n times exp(f ln 2) for n = rint(y),
// |f| <= 1/2, the exponential as its Taylor series to the 12th power
// (|f ln 2| < 0.35: the next term is below 2**-48).
inline double_float df_exp2(double_float y) {
  const float n = metal::rint(y.hi);
  if (!metal::isfinite(y.hi) || metal::abs(n) > 300.0f) {
    return double_float{metal::exp2(y.hi), 0.0f};
  }
  const double_float f = quick_two_sum(y.hi - n, y.lo);
  const double_float ln2{0.693147182464599609375f, -1.9046542121259336e-09f};
  const double_float t = df_mul(f, ln2);
  double_float sum{1.0f, 0.0f};
  for (int k = 12; k >= 1; --k) {
    sum = df_add(double_float{1.0f, 0.0f}, df_divide(df_mul(t, sum), float(k)));
  }
  return double_float{metal::ldexp(sum.hi, int(n)), metal::ldexp(sum.lo, int(n))};
}

// 2 ** (hi + lo) to float accuracy (about 1 ulp before the caller's
// rounding): 2 ** n times e ** t, t = (y - n) ln 2 in [-0.35, 0.35] carried
// in one float, e ** t by its Taylor series to t**8 / 8! (the next term is
// below 2**-31) with the leading 1 added last, so its rounding is the
// result's. fma throughout: the same roundings on every target.
inline float exp2_to_float(double_float y) {
  const float n = metal::rint(y.hi);
  if (!metal::isfinite(y.hi) || metal::abs(n) > 300.0f) {
    return metal::exp2(y.hi);
  }
  const double_float f = quick_two_sum(y.hi - n, y.lo);
  const float ln2_hi = 0.693147182464599609375f, ln2_lo = -1.9046542121259336e-09f;
  const float t = metal::fma(f.hi, ln2_hi, metal::fma(f.hi, ln2_lo, f.lo * ln2_hi));
  float series = 1.0f / 40320.0f;
  series = metal::fma(series, t, 1.0f / 5040.0f);
  series = metal::fma(series, t, 1.0f / 720.0f);
  series = metal::fma(series, t, 1.0f / 120.0f);
  series = metal::fma(series, t, 1.0f / 24.0f);
  series = metal::fma(series, t, 1.0f / 6.0f);
  series = metal::fma(series, t, 0.5f);
  series = metal::fma(series, t, 1.0f);
  return metal::ldexp(metal::fma(series, t, 1.0f), int(n));
}

// trunc(hi + lo) as a long, for magnitudes below 2**63.
inline long df_trunc_to_long(double_float a) {
  if (metal::trunc(a.hi) != a.hi) {
    return long(a.hi);  // |hi| < 2**23: lo is far below one unit
  }
  const bool positive = a.hi > 0.0f || (a.hi == 0.0f && a.lo > 0.0f);
  return long(a.hi) + long(positive ? metal::floor(a.lo) : metal::ceil(a.lo));
}

}  // namespace mps_ops
