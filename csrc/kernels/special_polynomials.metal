// Laguerre L_n(x) and Legendre P_n(x) by their three-term recurrences, in the
// CPU reference's order of operations so float results agree closely. n is
// read as a float and truncated, as the CPU does; NaN n, and n beyond the
// long range (inf included), count as negative: the CPU's conversion to int64
// gives INT64_MIN there on x86. The conversion itself is undefined out of
// range, and a GPU saturates it: +inf became a loop of 2**63 steps on the H100.
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
using namespace metal;

inline long polynomial_degree(float n) {
  return (isnan(n) || fabs(n) >= 9.223372036854775808e18f) ? -1 : long(n);
}

struct laguerre_polynomial_l_functor {
  template <typename T>
  float operator()(T x_in, T n_in) const {
    const float x = float(x_in);
    const long n = polynomial_degree(float(n_in));
    if (n < 0) {
      return 0.0f;
    }
    if (fabs(x) == 0.0f || n == 0) {
      return 1.0f;
    }
    if (n == 1) {
      return 1.0f - x;
    }
    float p = 1.0f;
    float q = 1.0f - x;
    float r = q;
    for (long k = 1; k < n && !isnan(q); ++k) {
      r = ((float(k + k) + (1.0f - x)) * q - float(k) * p) / float(k + 1);
      p = q;
      q = r;
    }
    return r;
  }
};

struct legendre_polynomial_p_functor {
  template <typename T>
  float operator()(T x_in, T n_in) const {
    const float x = float(x_in);
    const long n = polynomial_degree(float(n_in));
    if (n < 0) {
      return 0.0f;
    }
    if (fabs(x) == 1.0f) {
      return (x > 0.0f || n % 2 == 0) ? 1.0f : -1.0f;
    }
    if (n == 0) {
      return 1.0f;
    }
    if (n == 1) {
      return x;
    }
    float p = 1.0f;
    float q = x;
    float r = q;
    for (long k = 1; k < n && !isnan(q); ++k) {
      r = (float(k + k + 1) * x * q - float(k) * p) / float(k + 1);
      p = q;
      q = r;
    }
    return r;
  }
};

// Every integer input type and float, each read into float.
MPS_OPS_FOR_NONFLOATING(REGISTER_BINARY_OP, laguerre_polynomial_l, float)
REGISTER_BINARY_OP(laguerre_polynomial_l, float, float)
MPS_OPS_FOR_NONFLOATING(REGISTER_BINARY_OP, legendre_polynomial_p, float)
REGISTER_BINARY_OP(legendre_polynomial_p, float, float)
