// linalg_eig and linalg_eigvals of general real matrices: LAPACK's geev
// pipeline, one threadgroup per matrix.
//
//  1. Scale A by a power of two so that its largest entry is in [0.5, 1)
//     (exact; the eigenvalues are scaled back at the end), so no square or
//     product below overflows or underflows for A near float32's limits.
//  2. Balance (gebal's scaling): rows and columns scaled by powers of two
//     until their norms are close, which shrinks the backward error of
//     everything after for badly scaled matrices.
//  3. Reduce to upper Hessenberg form with Householder reflectors (gehd2),
//     accumulating them into Z when eigenvectors are wanted (orghr).
//  4. Francis double-shift QR (lahqr): bulges chased down the active block
//     with 3x3 reflectors, deflating where a subdiagonal entry is
//     negligible (with Ahues and Tisseur's test), exceptional shifts after
//     10 and 20 sweeps without deflation, each 2x2 block standardised
//     (lanv2): real eigenvalues made upper triangular, complex pairs given
//     equal diagonals. Z accumulates every transformation.
//  5. Eigenvectors (trevc, then geev's normalisation): back-substitution in
//     the real Schur form T, one thread per eigenvalue, in complex
//     arithmetic, with near-singular pivots perturbed to a small floor and
//     the vector rescaled before it could overflow; then v = D Z x, scaled
//     to unit 2-norm, a complex vector rotated so its largest component is
//     real.
//
// Threads share each step's work (rows or columns of an update) and read
// the step's decisions (deflation, shifts, reflectors) from the same memory
// after the same barriers, so every thread computes the same decision and
// every branch around a barrier is uniform. The matrix lives in device
// memory (the workspace copy of A), so no size limit comes from threadgroup
// memory.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>

#include "eig_params.h"
#include <mps_ops/householder.h>
#include <mps_ops/one_group_matrix.h>
using namespace metal;
using mps_ops::column_major;
using mps_ops::reflector;
using mps_ops::reflector_from_norm;
using mps_ops::with_sign_of;

namespace {

// LAPACK's slamch('P') (float spacing at 1, eps * base) and slamch('S').
constant constexpr float eig_ulp = 1.1920928955078125e-7f;
constant constexpr float eig_safe_min = 1.1754943508222875e-38f;
// Bounds of one diagonal balancing factor: 2**+-60.
constant constexpr float eig_balance_limit = 1.152921504606846976e18f;
// Back-substitution keeps right-hand sides below this (rescaling the whole
// vector), so quotients by the smallest pivot stay finite.
constant constexpr float eig_rescale_above = 1.0e4f;

struct complex_float {
  float re;
  float im;
};

inline complex_float make_complex(float re, float im) {
  complex_float c;
  c.re = re;
  c.im = im;
  return c;
}

inline complex_float complex_sub(complex_float a, complex_float b) {
  return make_complex(a.re - b.re, a.im - b.im);
}

inline complex_float complex_mul(complex_float a, complex_float b) {
  return make_complex(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}

inline complex_float complex_scale(complex_float a, float s) {
  return make_complex(a.re * s, a.im * s);
}

// Smith's division (no intermediate squares to overflow).
inline complex_float complex_div(complex_float a, complex_float b) {
  if (fabs(b.re) >= fabs(b.im)) {
    const float r = b.im / b.re;
    const float d = b.re + b.im * r;
    return make_complex((a.re + a.im * r) / d, (a.im - a.re * r) / d);
  }
  const float r = b.re / b.im;
  const float d = b.im + b.re * r;
  return make_complex((a.re * r + a.im) / d, (a.im * r - a.re) / d);
}

// |re| + |im|: LAPACK's cabs1, a cheap norm for pivoting and scaling.
inline float magnitude1(complex_float a) {
  return fabs(a.re) + fabs(a.im);
}

// Sums of two values over the group, on every thread (threads: a power of
// two, at most the scratch length).
inline void group_sums(thread float& first, thread float& second, threadgroup float* scratch_first,
                       threadgroup float* scratch_second, uint t, uint threads) {
  scratch_first[t] = first;
  scratch_second[t] = second;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint half_threads = threads / 2; half_threads > 0; half_threads /= 2) {
    if (t < half_threads) {
      scratch_first[t] += scratch_first[t + half_threads];
      scratch_second[t] += scratch_second[t + half_threads];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  first = scratch_first[0];
  second = scratch_second[0];
  threadgroup_barrier(mem_flags::mem_threadgroup);  // the scratch is reused next
}

// The reflector of a bulge's (x0, x1, x2) (x2 = 0 for a 2-vector), computed
// on the vector scaled to a largest entry of 1 so its squares stay normal.
struct small_reflector {
  float tau;
  float beta;
  float u1;
  float u2;
};

inline small_reflector bulge_reflector(float x0, float x1, float x2) {
  small_reflector r;
  const float scale = max(fabs(x0), max(fabs(x1), fabs(x2)));
  if (x1 == 0.0f && x2 == 0.0f) {
    r.tau = 0.0f;
    r.beta = x0;
    r.u1 = 0.0f;
    r.u2 = 0.0f;
    return r;
  }
  const float a = x0 / scale;
  const float b = x1 / scale;
  const float c = x2 / scale;
  const reflector scaled = reflector_from_norm(a, sqrt(b * b + c * c));
  r.tau = scaled.tau;
  r.beta = scaled.beta * scale;
  r.u1 = b * scaled.inverse;
  r.u2 = c * scaled.inverse;
  return r;
}

// A 2x2 diagonal block in standard form (lanv2): with the rotation
// R = [cs -sn; sn cs], R^T [a b; c d] R is upper triangular (real
// eigenvalues) or has equal diagonals and off-diagonals of opposite signs
// (a complex pair, eigenvalues a +- i sqrt(|b c|), the positive first).
struct standard_block {
  float a;
  float b;
  float c;
  float d;
  float cs;
  float sn;
  float first_re;
  float first_im;
  float second_re;
  float second_im;
};

inline standard_block standardize(float a, float b, float c, float d) {
  float cs = 1.0f;
  float sn = 0.0f;
  if (c == 0.0f) {
    // already upper triangular
  } else if (b == 0.0f) {
    // a swap of rows and columns makes it upper triangular
    cs = 0.0f;
    sn = 1.0f;
    const float held = d;
    d = a;
    a = held;
    b = -c;
    c = 0.0f;
  } else if (a - d == 0.0f && (b < 0.0f) != (c < 0.0f)) {
    // already standard: a complex pair
  } else {
    const float difference = a - d;
    float p = 0.5f * difference;
    const float bc_max = max(fabs(b), fabs(c));
    const float bc_min_signed = min(fabs(b), fabs(c)) * with_sign_of(1.0f, b) * with_sign_of(1.0f, c);
    const float scale = max(fabs(p), bc_max);
    float z = (p / scale) * p + (bc_max / scale) * bc_min_signed;
    if (z >= 4.0f * eig_ulp) {
      // real eigenvalues: rotate to upper triangular
      z = p + with_sign_of(sqrt(scale) * sqrt(z), p);
      a = d + z;
      d = d - (bc_max / z) * bc_min_signed;
      const float tau = sqrt(c * c + z * z);
      cs = z / tau;
      sn = c / tau;
      b = b - c;
      c = 0.0f;
    } else {
      // complex or nearly equal real eigenvalues: equalise the diagonal
      const float sigma = b + c;
      const float tau = sqrt(sigma * sigma + difference * difference);
      cs = sqrt(0.5f * (1.0f + fabs(sigma) / tau));
      sn = -(p / (tau * cs)) * with_sign_of(1.0f, sigma);
      // [aa bb; cc dd] = [a b; c d] R, then R^T [aa bb; cc dd]
      const float aa = a * cs + b * sn;
      const float bb = -a * sn + b * cs;
      const float cc = c * cs + d * sn;
      const float dd = -c * sn + d * cs;
      a = aa * cs + cc * sn;
      b = bb * cs + dd * sn;
      c = -aa * sn + cc * cs;
      d = -bb * sn + dd * cs;
      const float mean = 0.5f * (a + d);
      a = mean;
      d = mean;
      if (c != 0.0f) {
        if (b != 0.0f) {
          if ((b < 0.0f) == (c < 0.0f)) {
            // real after all: one more rotation makes it upper triangular
            const float sqrt_b = sqrt(fabs(b));
            const float sqrt_c = sqrt(fabs(c));
            p = with_sign_of(sqrt_b * sqrt_c, c);
            const float inverse_root = 1.0f / sqrt(fabs(b + c));
            a = mean + p;
            d = mean - p;
            b = b - c;
            c = 0.0f;
            const float cs1 = sqrt_b * inverse_root;
            const float sn1 = sqrt_c * inverse_root;
            const float combined = cs * cs1 - sn * sn1;
            sn = cs * sn1 + sn * cs1;
            cs = combined;
          }
        } else {
          b = -c;
          c = 0.0f;
          const float held = cs;
          cs = -sn;
          sn = held;
        }
      }
    }
  }
  standard_block s;
  s.a = a;
  s.b = b;
  s.c = c;
  s.d = d;
  s.cs = cs;
  s.sn = sn;
  s.first_re = a;
  s.second_re = d;
  s.first_im = c == 0.0f ? 0.0f : sqrt(fabs(b)) * sqrt(fabs(c));
  s.second_im = c == 0.0f ? 0.0f : -s.first_im;  // +0 for a real pair, as LAPACK's
  return s;
}

// Applies the rotation R = [cs -sn; sn cs] to the pair (x, y): (x, y) R.
inline void rotate(device float* x, device float* y, float cs, float sn) {
  const float held = *x;
  *x = cs * held + sn * *y;
  *y = cs * *y - sn * held;
}

// Step 1: the exponent e with max |A| * 2**-e in [0.5, 1); A scaled by it.
inline int normalize(device float* h, int n, threadgroup float* scratch, uint t, uint threads) {
  float largest = 0.0f;
  for (long e = t; e < long(n) * n; e += threads) {
    largest = max(largest, fabs(h[e]));
  }
  largest = mps_ops::group_largest(largest, scratch, t, threads);
  const int exponent = mps_ops::unit_exponent(largest);
  mps_ops::scale_by_power_of_two(h, long(n) * n, -exponent, t, threads);
  return exponent;
}

// Step 2: D^-1 A D with D's powers of two in scales (gebal, job 'S', with
// 2-norms as LAPACK since 3.5). A sweep bound keeps a pathological matrix
// from looping: balancing only improves accuracy, stopping early is safe.
inline void balance(device float* h, device float* scales, int n, threadgroup float* scratch_first,
                    threadgroup float* scratch_second, uint t, uint threads) {
  for (int sweep = 0; sweep < 32; ++sweep) {
    bool changed = false;
    for (int i = 0; i < n; ++i) {
      float column = 0.0f;
      float row = 0.0f;
      for (int j = int(t); j < n; j += int(threads)) {
        if (j != i) {
          const float below = h[column_major(j, i, n)];
          const float across = h[column_major(i, j, n)];
          column += below * below;
          row += across * across;
        }
      }
      group_sums(column, row, scratch_first, scratch_second, t, threads);
      float c = sqrt(column);
      float r = sqrt(row);
      if (c == 0.0f || r == 0.0f) {
        continue;
      }
      const float before = c + r;
      const float so_far = scales[i];
      float f = 1.0f;
      float g = 0.5f * r;
      while (c < g && f * so_far < eig_balance_limit) {
        f *= 2.0f;
        c *= 2.0f;
        r *= 0.5f;
        g *= 0.5f;
      }
      g = 0.5f * c;
      while (g >= r && f * so_far > 1.0f / eig_balance_limit) {
        f *= 0.5f;
        c *= 0.5f;
        g *= 0.5f;
        r *= 2.0f;
      }
      if (c + r >= 0.95f * before) {
        continue;
      }
      changed = true;
      threadgroup_barrier(mem_flags::mem_device);  // every thread has read scales[i]
      if (t == 0) {
        scales[i] = so_far * f;
      }
      const float inverse = 1.0f / f;
      for (int j = int(t); j < n; j += int(threads)) {
        if (j != i) {
          h[column_major(i, j, n)] *= inverse;
          h[column_major(j, i, n)] *= f;
        }
      }
      threadgroup_barrier(mem_flags::mem_device);
    }
    if (!changed) {
      break;
    }
  }
}

// Step 3: Q^T A Q upper Hessenberg; Z = Q when vectors are wanted.
inline void hessenberg(device float* h, device float* z, int n, bool vectors, threadgroup float* scratch_first,
                       threadgroup float* scratch_second, uint t, uint threads) {
  for (int k = 0; k + 2 < n; ++k) {
    // The reflector of column k below the subdiagonal; u lives in
    // A(k + 2:, k) (u_0 = 1 implied), which no update below touches.
    const float alpha = h[column_major(k + 1, k, n)];
    float squares = 0.0f;
    float unused = 0.0f;
    for (int i = k + 2 + int(t); i < n; i += int(threads)) {
      const float x = h[column_major(i, k, n)];
      squares += x * x;
    }
    group_sums(squares, unused, scratch_first, scratch_second, t, threads);
    const reflector r = reflector_from_norm(alpha, sqrt(squares));
    if (r.tau == 0.0f) {
      continue;
    }
    for (int i = k + 2 + int(t); i < n; i += int(threads)) {
      h[column_major(i, k, n)] *= r.inverse;
    }
    if (t == 0) {
      h[column_major(k + 1, k, n)] = r.beta;
    }
    threadgroup_barrier(mem_flags::mem_device);
    // From the left, one column per thread: A(k+1:, j) -= tau u (u^T A(k+1:, j)).
    for (int j = k + 1 + int(t); j < n; j += int(threads)) {
      float w = h[column_major(k + 1, j, n)];
      for (int i = k + 2; i < n; ++i) {
        w += h[column_major(i, k, n)] * h[column_major(i, j, n)];
      }
      w *= r.tau;
      h[column_major(k + 1, j, n)] -= w;
      for (int i = k + 2; i < n; ++i) {
        h[column_major(i, j, n)] -= w * h[column_major(i, k, n)];
      }
    }
    threadgroup_barrier(mem_flags::mem_device);
    // From the right, one row per thread (of A, and of Z).
    for (int i = int(t); i < n; i += int(threads)) {
      float w = h[column_major(i, k + 1, n)];
      for (int j = k + 2; j < n; ++j) {
        w += h[column_major(i, j, n)] * h[column_major(j, k, n)];
      }
      w *= r.tau;
      h[column_major(i, k + 1, n)] -= w;
      for (int j = k + 2; j < n; ++j) {
        h[column_major(i, j, n)] -= w * h[column_major(j, k, n)];
      }
      if (vectors) {
        float wz = z[column_major(i, k + 1, n)];
        for (int j = k + 2; j < n; ++j) {
          wz += z[column_major(i, j, n)] * h[column_major(j, k, n)];
        }
        wz *= r.tau;
        z[column_major(i, k + 1, n)] -= wz;
        for (int j = k + 2; j < n; ++j) {
          z[column_major(i, j, n)] -= wz * h[column_major(j, k, n)];
        }
      }
    }
    threadgroup_barrier(mem_flags::mem_device);
  }
  // The reflectors' storage becomes the Hessenberg form's zeros.
  for (int j = int(t); j + 2 < n; j += int(threads)) {
    for (int i = j + 2; i < n; ++i) {
      h[column_major(i, j, n)] = 0.0f;
    }
  }
  threadgroup_barrier(mem_flags::mem_device);
}

// The lowest row l <= hi of the active block ending at hi: A(l, l - 1) is
// negligible (or l is `lowest`). lahqr's test, with Ahues and Tisseur's
// refinement.
inline int active_block_start(device const float* h, int n, int lowest, int hi, float small_num) {
  int k = hi;
  for (; k > lowest; --k) {
    const float below = fabs(h[column_major(k, k - 1, n)]);
    if (below <= small_num) {
      break;
    }
    float diagonal = fabs(h[column_major(k - 1, k - 1, n)]) + fabs(h[column_major(k, k, n)]);
    if (diagonal == 0.0f) {
      if (k - 2 >= lowest) {
        diagonal += fabs(h[column_major(k - 1, k - 2, n)]);
      }
      if (k + 1 <= hi) {
        diagonal += fabs(h[column_major(k + 1, k, n)]);
      }
    }
    if (below <= eig_ulp * diagonal) {
      const float above = fabs(h[column_major(k - 1, k, n)]);
      const float ab = max(below, above);
      const float ba = min(below, above);
      const float last = fabs(h[column_major(k, k, n)]);
      const float gap = fabs(h[column_major(k - 1, k - 1, n)] - h[column_major(k, k, n)]);
      const float aa = max(last, gap);
      const float bb = min(last, gap);
      const float s = aa + ab;
      if (ba * (ab / s) <= max(small_num, eig_ulp * (bb * (aa / s)))) {
        break;
      }
    }
  }
  return k;
}

// Step 4: the real Schur form T = Z^T H Z in h (the whole matrix when
// vectors are wanted, else only the active blocks), eigenvalues as (re, im)
// pairs in values. Returns 0, or LAPACK's info (hi + 1) where the
// iterations ran out.
inline int schur(device float* h, device float* z, device float* values, int n, bool vectors, int limit, uint t,
                 uint threads) {
  const float small_num = eig_safe_min * (float(n) / eig_ulp);
  int hi = n - 1;
  int l = 0;
  int iterations = 0;
  while (hi >= 0) {
    if (iterations > limit) {
      return hi + 1;
    }
    l = active_block_start(h, n, l, hi, small_num);
    if (l >= hi - 1) {
      // One or two eigenvalues split off.
      const bool pair = l == hi - 1;
      standard_block block;
      if (pair) {
        block = standardize(h[column_major(hi - 1, hi - 1, n)], h[column_major(hi - 1, hi, n)], h[column_major(hi, hi - 1, n)], h[column_major(hi, hi, n)]);
      }
      const float last = h[column_major(hi, hi, n)];
      threadgroup_barrier(mem_flags::mem_device);  // every thread has read the block
      if (t == 0) {
        if (l > 0) {
          h[column_major(l, l - 1, n)] = 0.0f;
        }
        if (pair) {
          h[column_major(hi - 1, hi - 1, n)] = block.a;
          h[column_major(hi - 1, hi, n)] = block.b;
          h[column_major(hi, hi - 1, n)] = block.c;
          h[column_major(hi, hi, n)] = block.d;
          values[2 * (hi - 1)] = block.first_re;
          values[2 * (hi - 1) + 1] = block.first_im;
          values[2 * hi] = block.second_re;
          values[2 * hi + 1] = block.second_im;
        } else {
          values[2 * hi] = last;
          values[2 * hi + 1] = 0.0f;
        }
      }
      if (pair && vectors) {
        for (int j = hi + 1 + int(t); j < n; j += int(threads)) {
          rotate(h + column_major(hi - 1, j, n), h + column_major(hi, j, n), block.cs, block.sn);
        }
        for (int i = int(t); i < hi - 1; i += int(threads)) {
          rotate(h + column_major(i, hi - 1, n), h + column_major(i, hi, n), block.cs, block.sn);
        }
        for (int i = int(t); i < n; i += int(threads)) {
          rotate(z + column_major(i, hi - 1, n), z + column_major(i, hi, n), block.cs, block.sn);
        }
      }
      threadgroup_barrier(mem_flags::mem_device);
      hi -= pair ? 2 : 1;
      l = 0;
      iterations = 0;
      continue;
    }
    ++iterations;
    // The shifts: the trailing 2x2 block's eigenvalues, or an exceptional
    // pair after 10 (top of the block) and 20 (bottom) sweeps without a
    // deflation.
    float h11;
    float h12;
    float h21;
    float h22;
    if (iterations % 20 == 10) {
      const float s = fabs(h[column_major(l + 1, l, n)]) + fabs(h[column_major(l + 2, l + 1, n)]);
      h11 = 0.75f * s + h[column_major(l, l, n)];
      h12 = -0.4375f * s;
      h21 = s;
      h22 = h11;
    } else if (iterations % 20 == 0) {
      const float s = fabs(h[column_major(hi, hi - 1, n)]) + fabs(h[column_major(hi - 1, hi - 2, n)]);
      h11 = 0.75f * s + h[column_major(hi, hi, n)];
      h12 = -0.4375f * s;
      h21 = s;
      h22 = h11;
    } else {
      h11 = h[column_major(hi - 1, hi - 1, n)];
      h21 = h[column_major(hi, hi - 1, n)];
      h12 = h[column_major(hi - 1, hi, n)];
      h22 = h[column_major(hi, hi, n)];
    }
    float rt1r = 0.0f;
    float rt1i = 0.0f;
    float rt2r = 0.0f;
    float rt2i = 0.0f;
    const float s = fabs(h11) + fabs(h12) + fabs(h21) + fabs(h22);
    if (s != 0.0f) {
      h11 /= s;
      h21 /= s;
      h12 /= s;
      h22 /= s;
      const float trace = 0.5f * (h11 + h22);
      const float det = (h11 - trace) * (h22 - trace) - h12 * h21;
      const float root = sqrt(fabs(det));
      if (det >= 0.0f) {
        rt1r = trace * s;
        rt2r = rt1r;
        rt1i = root * s;
        rt2i = -rt1i;
      } else {
        // real: both shifts the eigenvalue nearer h22
        rt1r = trace + root;
        rt2r = trace - root;
        rt1r = (fabs(rt1r - h22) <= fabs(rt2r - h22) ? rt1r : rt2r) * s;
        rt2r = rt1r;
      }
    }
    // Where the bulge starts: the lowest m whose first column of
    // (H - s1)(H - s2) makes A(m, m - 1) negligible (two small
    // consecutive subdiagonal products).
    int m = hi - 2;
    float v0;
    float v1;
    float v2;
    for (;; --m) {
      const float hmm = h[column_major(m, m, n)];
      float below = h[column_major(m + 1, m, n)];
      const float scale = fabs(hmm - rt2r) + fabs(rt2i) + fabs(below);
      below /= scale;
      v0 = below * h[column_major(m, m + 1, n)] + (hmm - rt1r) * ((hmm - rt2r) / scale) - rt1i * (rt2i / scale);
      v1 = below * (hmm + h[column_major(m + 1, m + 1, n)] - rt1r - rt2r);
      v2 = below * h[column_major(m + 2, m + 1, n)];
      const float total = fabs(v0) + fabs(v1) + fabs(v2);
      v0 /= total;
      v1 /= total;
      v2 /= total;
      if (m == l) {
        break;
      }
      const float left = fabs(h[column_major(m, m - 1, n)]) * (fabs(v1) + fabs(v2));
      const float right = fabs(v0) * (fabs(h[column_major(m - 1, m - 1, n)]) + fabs(hmm) + fabs(h[column_major(m + 1, m + 1, n)]));
      if (left <= eig_ulp * right) {
        break;
      }
    }
    threadgroup_barrier(mem_flags::mem_device);  // every thread has read what the chase changes
    if (t == 0 && l > 0) {
      h[column_major(l, l - 1, n)] = 0.0f;
    }
    const int last_column = vectors ? n - 1 : hi;
    const int first_row = vectors ? 0 : l;
    for (int k = m; k < hi; ++k) {
      const int rows = min(3, hi - k + 1);
      float x0 = v0;
      float x1 = v1;
      float x2 = v2;
      if (k > m) {
        x0 = h[column_major(k, k - 1, n)];
        x1 = h[column_major(k + 1, k - 1, n)];
        x2 = rows == 3 ? h[column_major(k + 2, k - 1, n)] : 0.0f;
        threadgroup_barrier(mem_flags::mem_device);  // read before thread 0 writes column k - 1
      }
      const small_reflector r = bulge_reflector(x0, x1, rows == 3 ? x2 : 0.0f);
      if (t == 0) {
        if (k > m) {
          h[column_major(k, k - 1, n)] = r.beta;
          h[column_major(k + 1, k - 1, n)] = 0.0f;
          if (rows == 3) {
            h[column_major(k + 2, k - 1, n)] = 0.0f;
          }
        } else if (m > l) {
          // lahqr's guard for u underflowing: scale rather than negate.
          h[column_major(k, k - 1, n)] *= 1.0f - r.tau;
        }
      }
      // From the left: rows k..k + rows - 1, one column per thread.
      for (int j = k + int(t); j <= last_column; j += int(threads)) {
        float sum = h[column_major(k, j, n)] + r.u1 * h[column_major(k + 1, j, n)];
        if (rows == 3) {
          sum += r.u2 * h[column_major(k + 2, j, n)];
        }
        sum *= r.tau;
        h[column_major(k, j, n)] -= sum;
        h[column_major(k + 1, j, n)] -= sum * r.u1;
        if (rows == 3) {
          h[column_major(k + 2, j, n)] -= sum * r.u2;
        }
      }
      threadgroup_barrier(mem_flags::mem_device);
      // From the right: columns k..k + rows - 1, one row per thread (of H
      // down to the bulge, and of Z).
      const int last_row = min(k + 3, hi);
      for (int i = first_row + int(t); i <= last_row; i += int(threads)) {
        float sum = h[column_major(i, k, n)] + r.u1 * h[column_major(i, k + 1, n)];
        if (rows == 3) {
          sum += r.u2 * h[column_major(i, k + 2, n)];
        }
        sum *= r.tau;
        h[column_major(i, k, n)] -= sum;
        h[column_major(i, k + 1, n)] -= sum * r.u1;
        if (rows == 3) {
          h[column_major(i, k + 2, n)] -= sum * r.u2;
        }
      }
      if (vectors) {
        for (int i = int(t); i < n; i += int(threads)) {
          float sum = z[column_major(i, k, n)] + r.u1 * z[column_major(i, k + 1, n)];
          if (rows == 3) {
            sum += r.u2 * z[column_major(i, k + 2, n)];
          }
          sum *= r.tau;
          z[column_major(i, k, n)] -= sum;
          z[column_major(i, k + 1, n)] -= sum * r.u1;
          if (rows == 3) {
            z[column_major(i, k + 2, n)] -= sum * r.u2;
          }
        }
      }
      threadgroup_barrier(mem_flags::mem_device);
    }
  }
  return 0;
}

// x(i) of an eigenvector being solved: complex, in the result's column.
inline complex_float load(device const float* x, int i) {
  return make_complex(x[2 * i], x[2 * i + 1]);
}

inline void store(device float* x, int i, complex_float value) {
  x[2 * i] = value.re;
  x[2 * i + 1] = value.im;
}

// Scales x(0..top) by 1 / largest where its largest right-hand side has
// grown past eig_rescale_above (the vector is normalised at the end).
inline void keep_bounded(device float* x, int top, float largest) {
  if (largest <= eig_rescale_above) {
    return;
  }
  const float inverse = 1.0f / largest;
  for (int i = 0; i <= top; ++i) {
    store(x, i, complex_scale(load(x, i), inverse));
  }
}

// Solves the 2x2 complex system [m00 m01; m10 m11] y = (b0, b1) by
// complete pivoting, pivots below smin raised to smin (trevc's
// perturbation of a near-singular block).
inline void solve_2x2(complex_float m00, complex_float m01, complex_float m10, complex_float m11, complex_float b0,
                      complex_float b1, float smin, thread complex_float& y0, thread complex_float& y1) {
  // Bring the largest entry to (0, 0): rows swap with b, columns with y.
  const float a00 = magnitude1(m00);
  const float a01 = magnitude1(m01);
  const float a10 = magnitude1(m10);
  const float a11 = magnitude1(m11);
  const bool swap_rows = max(a10, a11) > max(a00, a01);
  if (swap_rows) {
    complex_float held = m00;
    m00 = m10;
    m10 = held;
    held = m01;
    m01 = m11;
    m11 = held;
    held = b0;
    b0 = b1;
    b1 = held;
  }
  const bool swap_columns = magnitude1(m01) > magnitude1(m00);
  if (swap_columns) {
    complex_float held = m00;
    m00 = m01;
    m01 = held;
    held = m10;
    m10 = m11;
    m11 = held;
  }
  if (magnitude1(m00) < smin) {
    m00 = make_complex(smin, 0.0f);
  }
  const complex_float factor = complex_div(m10, m00);
  complex_float u11 = complex_sub(m11, complex_mul(factor, m01));
  if (magnitude1(u11) < smin) {
    u11 = make_complex(smin, 0.0f);
  }
  const complex_float second = complex_div(complex_sub(b1, complex_mul(factor, b0)), u11);
  const complex_float first = complex_div(complex_sub(b0, complex_mul(m01, second)), m00);
  y0 = swap_columns ? second : first;
  y1 = swap_columns ? first : second;
}

// Step 5a: the eigenvector x of T for eigenvalue ki (a complex pair's first,
// ki + 1 its second), written into x(0..ki or ki + 1).
inline void solve_schur_vector(device const float* h, device const float* values, device float* x, int n, int ki,
                               float small_num) {
  const complex_float lambda = make_complex(values[2 * ki], values[2 * ki + 1]);
  const bool pair = lambda.im > 0.0f;
  int top = ki;
  if (pair) {
    // The standard block's own eigenvector: [-i w, b; c, -i w] x = 0.
    const float b = h[column_major(ki, ki + 1, n)];
    const float c = h[column_major(ki + 1, ki, n)];
    const complex_float x0 = fabs(b) >= fabs(c) ? make_complex(1.0f, 0.0f) : make_complex(0.0f, lambda.im / c);
    const complex_float x1 = fabs(b) >= fabs(c) ? make_complex(0.0f, lambda.im / b) : make_complex(1.0f, 0.0f);
    store(x, ki, x0);
    store(x, ki + 1, x1);
    for (int j = 0; j < ki; ++j) {
      const complex_float sum = make_complex(x0.re * h[column_major(j, ki, n)] + x1.re * h[column_major(j, ki + 1, n)],
                                             x0.im * h[column_major(j, ki, n)] + x1.im * h[column_major(j, ki + 1, n)]);
      store(x, j, make_complex(-sum.re, -sum.im));
    }
    top = ki + 1;
  } else {
    store(x, ki, make_complex(1.0f, 0.0f));
    for (int j = 0; j < ki; ++j) {
      store(x, j, make_complex(-h[column_major(j, ki, n)], 0.0f));
    }
  }
  // The floor for near-singular pivots (trevc's smin, with a relative
  // floor of ulp**2 of T's scale of about 1, which bounds the quotients).
  const float smin = max(eig_ulp * (fabs(lambda.re) + fabs(lambda.im)), max(small_num, eig_ulp * eig_ulp));
  int j = ki - 1;
  while (j >= 0) {
    if (values[2 * j + 1] < 0.0f) {
      // j closes a 2x2 block (j - 1, j).
      keep_bounded(x, top, max(magnitude1(load(x, j - 1)), magnitude1(load(x, j))));
      complex_float y0;
      complex_float y1;
      solve_2x2(make_complex(h[column_major(j - 1, j - 1, n)] - lambda.re, -lambda.im), make_complex(h[column_major(j - 1, j, n)], 0.0f),
                make_complex(h[column_major(j, j - 1, n)], 0.0f), make_complex(h[column_major(j, j, n)] - lambda.re, -lambda.im),
                load(x, j - 1), load(x, j), smin, y0, y1);
      store(x, j - 1, y0);
      store(x, j, y1);
      for (int i = 0; i < j - 1; ++i) {
        const float first = h[column_major(i, j - 1, n)];
        const float second = h[column_major(i, j, n)];
        const complex_float xi = load(x, i);
        store(x, i, make_complex(xi.re - y0.re * first - y1.re * second, xi.im - y0.im * first - y1.im * second));
      }
      j -= 2;
    } else {
      keep_bounded(x, top, magnitude1(load(x, j)));
      complex_float pivot = make_complex(h[column_major(j, j, n)] - lambda.re, -lambda.im);
      if (magnitude1(pivot) < smin) {
        pivot = make_complex(smin, 0.0f);
      }
      const complex_float y = complex_div(load(x, j), pivot);
      store(x, j, y);
      for (int i = 0; i < j; ++i) {
        const float tij = h[column_major(i, j, n)];
        const complex_float xi = load(x, i);
        store(x, i, make_complex(xi.re - y.re * tij, xi.im - y.im * tij));
      }
      j -= 1;
    }
  }
}

// Step 5b: v = D Z x into h's column ki (a pair: real part in ki,
// imaginary in ki + 1, as geev packs them), then the result's columns: v
// over its 2-norm, a pair's rotated to make its largest component real and
// positive, and its conjugate beside it.
inline void finish_vector(device float* h, device const float* z, device const float* scales,
                          device float* vectors, int n, int ki, bool pair) {
  device float* x = vectors + long(ki) * n * 2;
  const int top = pair ? ki + 1 : ki;
  float largest = 0.0f;
  for (int i = 0; i < n; ++i) {
    float re = 0.0f;
    float im = 0.0f;
    for (int j = 0; j <= top; ++j) {
      const float zij = z[column_major(i, j, n)];
      re += zij * x[2 * j];
      im += zij * x[2 * j + 1];
    }
    re *= scales[i];
    im *= scales[i];
    h[column_major(i, ki, n)] = re;
    if (pair) {
      h[column_major(i, ki + 1, n)] = im;
    }
    largest = max(largest, max(fabs(re), fabs(im)));
  }
  // The 2-norm, scaled by the largest component (D may be far from 1).
  float squares = 0.0f;
  float biggest_modulus = -1.0f;
  int biggest = 0;
  const float inverse_largest = largest > 0.0f ? 1.0f / largest : 0.0f;
  for (int i = 0; i < n; ++i) {
    const float re = h[column_major(i, ki, n)] * inverse_largest;
    const float im = pair ? h[column_major(i, ki + 1, n)] * inverse_largest : 0.0f;
    const float modulus = re * re + im * im;
    squares += modulus;
    if (modulus > biggest_modulus) {
      biggest_modulus = modulus;
      biggest = i;
    }
  }
  const float inverse_norm = inverse_largest / sqrt(squares);
  // The pair's phase: multiply by conj(v_biggest) / |v_biggest|.
  complex_float phase = make_complex(1.0f, 0.0f);
  if (pair) {
    const float re = h[column_major(biggest, ki, n)] * inverse_largest;
    const float im = h[column_major(biggest, ki + 1, n)] * inverse_largest;
    const float modulus = sqrt(re * re + im * im);
    phase = make_complex(re / modulus, -im / modulus);
  }
  device float* conjugate = vectors + long(ki + 1) * n * 2;
  for (int i = 0; i < n; ++i) {
    const complex_float v = make_complex(h[column_major(i, ki, n)] * inverse_norm, pair ? h[column_major(i, ki + 1, n)] * inverse_norm : 0.0f);
    complex_float rotated = complex_mul(v, phase);
    if (pair && i == biggest) {
      rotated.im = 0.0f;  // real by construction: no rounding left over
    }
    store(x, i, rotated);
    if (pair) {
      store(conjugate, i, make_complex(rotated.re, -rotated.im));
    }
  }
}

}  // namespace

template <typename T>
kernel void eig(device T* workspace [[buffer(0)]],
                device T* schur_vectors [[buffer(1)]],
                device T* balancing [[buffer(2)]],
                device T* eigenvalues [[buffer(3)]],
                device T* eigenvectors [[buffer(4)]],
                device int* info [[buffer(5)]],
                constant mps_ops::eig_params& p [[buffer(6)]],
                uint matrix [[threadgroup_position_in_grid]],
                uint t [[thread_index_in_threadgroup]],
                uint threads [[threads_per_threadgroup]]) {
  threadgroup float scratch_first[mps_ops::eig_max_threads];
  threadgroup float scratch_second[mps_ops::eig_max_threads];
  const int n = p.n;
  const bool vectors = p.want_vectors != 0;
  const long square = long(n) * long(n);
  device float* h = workspace + long(matrix) * square;
  device float* z = schur_vectors + (vectors ? long(matrix) * square : 0);
  device float* scales = balancing + long(matrix) * n;
  device float* values = eigenvalues + long(matrix) * n * 2;
  device float* x = eigenvectors + (vectors ? long(matrix) * square * 2 : 0);
  for (int i = int(t); i < n; i += int(threads)) {
    scales[i] = 1.0f;
    if (vectors) {
      for (int j = 0; j < n; ++j) {
        z[column_major(i, j, n)] = i == j ? 1.0f : 0.0f;
      }
    }
  }
  // A NaN or an infinity (linalg.eigvals only; linalg.eig refuses them):
  // every eigenvalue NaN, as LAPACK's answer (where it returns) is.
  float nonfinite = 0.0f;
  float unused = 0.0f;
  for (long e = t; e < square; e += threads) {
    nonfinite += isfinite(h[e]) ? 0.0f : 1.0f;
  }
  group_sums(nonfinite, unused, scratch_first, scratch_second, t, threads);
  if (nonfinite > 0.0f) {
    for (int i = int(t); i < 2 * n; i += int(threads)) {
      values[i] = numeric_limits<float>::quiet_NaN();
    }
    if (t == 0) {
      info[matrix] = 0;
    }
    return;
  }
  const int exponent = normalize(h, n, scratch_first, t, threads);
  balance(h, scales, n, scratch_first, scratch_second, t, threads);
  hessenberg(h, z, n, vectors, scratch_first, scratch_second, t, threads);
  const int failed = schur(h, z, values, n, vectors, p.iteration_limit, t, threads);
  if (failed != 0) {
    if (t == 0) {
      info[matrix] = failed;
    }
    return;
  }
  if (vectors) {
    const float small_num = eig_safe_min * (float(n) / eig_ulp);
    for (int ki = int(t); ki < n; ki += int(threads)) {
      if (values[2 * ki + 1] >= 0.0f) {  // a pair's second is its first's conjugate
        solve_schur_vector(h, values, x + long(ki) * n * 2, n, ki, small_num);
      }
    }
    threadgroup_barrier(mem_flags::mem_device);  // T is read for the last time
    for (int ki = int(t); ki < n; ki += int(threads)) {
      if (values[2 * ki + 1] >= 0.0f) {
        finish_vector(h, z, scales, x, n, ki, values[2 * ki + 1] > 0.0f);
      }
    }
    threadgroup_barrier(mem_flags::mem_device);  // every thread has read the eigenvalues
  }
  for (int i = int(t); i < n; i += int(threads)) {
    values[2 * i] = ldexp(values[2 * i], exponent);
    values[2 * i + 1] = ldexp(values[2 * i + 1], exponent);
  }
  if (t == 0) {
    info[matrix] = 0;
  }
}

MPS_OPS_INSTANTIATE_FOR_TYPE(eig, dense, float)
