// poisson (a fill for torch 2.9 to 2.13; the host stub in
// csrc/operations/poisson.mm): one thread per rate draws a Poisson count,
// from its own stream of Philox4x32-10 words (mps_ops/philox.h; counter:
// the element's index and a draw number; key: four words the host drew from
// the generator). The CPU's algorithms, in float: below a rate of 10 the
// product of uniforms (Knuth), from 10 Hormann's transformed rejection with
// squeeze (PTRS, "The transformed rejection method for generating Poisson
// random variables", 1993). Its acceptance test compares log V with
// log p(k) = -lam + k log lam - log k!, which in float would cancel terms
// of the rate's size (1e7 for a rate of 1e6); written around x = k + 1 =
// lam (1 + t) with Stirling's series it is -lam phi(t) + log(1 + t) -
// log(2 pi x) / 2 - its correction, phi(t) = (1 + t) log(1 + t) - t, each
// term moderate. A rate that is negative or NaN raises the host's
// KernelFlag (the CPU's RuntimeError); an infinite rate gives infinity (the
// CPU's converts it to an integer: garbage).
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/no_params.h>
#include <mps_ops/philox.h>
using namespace metal;

namespace {

// Uniforms on (0, 1) from one element's Philox stream, four per block: the
// midpoints of a word's top 24 bits' cells. (mps_ops::unit_float's [0, 1)
// draws an exact 0 once in 2**24: PTRS then takes log V = -inf and accepts
// whatever count it proposed, impossible ones included.)
struct uniform_stream {
  uint element;
  uint draws;
  uint k0, k1, c2, c3;
  mps_ops::philox_block block;

  float next() {
    const uint m = draws & 3u;
    if (m == 0) {
      block = mps_ops::philox4x32(element, draws >> 2, c2, c3, k0, k1);
    }
    ++draws;
    return (float(block.word[m] >> 8) + 0.5f) * 5.9604644775390625e-08f;  // 2**-24
  }
};

// log k! for k < 10, exactly rounded.
constant float log_factorial[10] = {0.0f, 0.0f, 0.69314718f, 1.7917595f, 3.1780538f,
                                     4.7874917f, 6.5792512f, 8.5251614f, 10.604603f, 12.801827f};

// (1 + t) log(1 + t) - t, without the cancellation near t = 0 (MSL has no
// log1p; from |t| = 0.1 the rounding of 1 + t costs under 1e-6 relative).
inline float phi(float t) {
  if (fabs(t) < 0.1f) {
    // sum over n >= 2 of (-t)^n / (n (n - 1)), to t^9
    float sum = 0.0f;
    float power = t * t;
    for (int n = 2; n <= 9; ++n) {
      sum += ((n & 1) != 0 ? -power : power) / float(n * (n - 1));
      power *= t;
    }
    return sum;
  }
  return (1.0f + t) * log(1.0f + t) - t;
}

// log p(k) for a rate lam of 10 or more (k >= 0).
inline float log_pmf(float k, float lam, float log_lam) {
  if (k < 10.0f) {
    return -lam + k * log_lam - log_factorial[int(k)];
  }
  const float x = k + 1.0f;
  const float t = (x - lam) / lam;
  // Stirling: log k! = (k + 1/2) log x - x + log(2 pi) / 2 + 1/(12 x) - 1/(360 x^3).
  const float inverse = 1.0f / x;
  const float correction = inverse * (1.0f / 12.0f - inverse * inverse * (1.0f / 360.0f));
  // (log(1 + t) in absolute terms to an ulp of 1: what the sum needs.)
  return -lam * phi(t) + log(1.0f + t) - 0.5f * log(x) - 0.91893853f - correction;
}

inline float knuth(float lam, thread uniform_stream& u) {
  const float limit = exp(-lam);
  float count = 0.0f;
  float product = u.next();
  while (product > limit) {
    count += 1.0f;
    product *= u.next();
  }
  return count;
}

inline float ptrs(float lam, thread uniform_stream& u) {
  const float root = sqrt(lam), log_lam = log(lam);
  const float b = 0.931f + 2.53f * root;
  const float a = -0.059f + 0.02483f * b;
  const float log_inverse_alpha = log(1.1239f + 1.1328f / (b - 3.4f));
  const float vr = 0.9277f - 3.6224f / (b - 2.0f);
  while (true) {
    const float U = u.next() - 0.5f;
    const float V = u.next();
    const float us = 0.5f - fabs(U);
    const float k = floor((2.0f * a / us + b) * U + lam + 0.43f);
    if (us >= 0.07f && V <= vr) {
      return k;
    }
    if (k < 0.0f || (us < 0.013f && V > us)) {
      continue;
    }
    if (log(V) + log_inverse_alpha - log(a / (us * us) + b) <= log_pmf(k, lam, log_lam)) {
      return k;
    }
  }
}

}  // namespace

template <typename T>
kernel void poisson(device T* out [[buffer(0)]],
                    constant T* rates [[buffer(1)]],
                    constant int* key [[buffer(2)]],
                    constant mps_ops::no_params& params [[buffer(3)]],
                    device int* bad_rate [[buffer(4)]],
                    uint index [[thread_position_in_grid]]) {
  const float lam = float(rates[index]);
  if (!(lam >= 0.0f)) {  // negative or NaN
    bad_rate[0] = 1;
    out[index] = static_cast<T>(numeric_limits<float>::quiet_NaN());
    return;
  }
  uniform_stream u{index, 0u, uint(key[0]), uint(key[1]), uint(key[2]), uint(key[3]), {}};
  float count = 0.0f;
  if (isinf(lam)) {
    count = lam;
  } else if (lam >= 10.0f) {
    count = ptrs(lam, u);
  } else if (lam > 0.0f) {
    count = knuth(lam, u);
  }
  out[index] = static_cast<T>(count);
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, poisson, dense)
