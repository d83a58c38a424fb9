// Householder reflectors as LAPACK's larfg forms them, shared by the kernels
// that factor with them (eig.metal's Hessenberg reduction, geqrf.metal).
#pragma once
#include <metal_stdlib>

namespace mps_ops {

// Fortran's SIGN(a, b): |a| with b's sign (+ for b == 0).
inline float with_sign_of(float a, float b) {
  return b < 0.0f ? -metal::fabs(a) : metal::fabs(a);
}

// A Householder reflector (larfg): I - tau u u^T with u = (1, u_1, ...)
// maps (alpha, x) to (beta, 0, ...); u_i = x_i * inverse. tau = 0 (the
// identity) where x is zero.
struct reflector {
  float tau;
  float beta;
  float inverse;
};

inline reflector reflector_from_norm(float alpha, float x_norm) {
  reflector r;
  if (x_norm == 0.0f) {
    r.tau = 0.0f;
    r.beta = alpha;
    r.inverse = 0.0f;
    return r;
  }
  const float beta = -with_sign_of(metal::sqrt(alpha * alpha + x_norm * x_norm), alpha);
  r.tau = (beta - alpha) / beta;
  r.beta = beta;
  r.inverse = 1.0f / (alpha - beta);
  return r;
}

}  // namespace mps_ops
