// Discrete log-probabilities that float holds without cancelling terms of
// the counts' size (a rate of 1e6 has log p = -lam + k log lam - log k!
// from terms of 1e7): Stirling's series around the distribution's mean, as
// in Loader's saddle-point form, leaves each term moderate. The samplers'
// acceptance tests (poisson, binomial) compare a uniform's log with them.
// MSL has neither log1p nor lgamma.
#pragma once
#include <metal_stdlib>

namespace mps_ops {

// log(1 + x) to float's relative precision, also where 1 + x rounds:
// log(u) x / (u - 1) with u = 1 + x rounded (Goldberg 1991; kernels are
// built without fast math, which could fold u - 1 into x).
inline float log1p_float(float x) {
  const float u = 1.0f + x;
  if (u == 1.0f) {
    return x;
  }
  return metal::log(u) * (x / (u - 1.0f));
}

// w - log(1 + w) for w > -1, without the cancellation near w = 0 (the
// Gamma sampler's log test: d (1 - v + log v) with v = 1 + w near 1; the
// Gamma and Beta gradients' saddle points). For |w| < 1/2, with
// t = w / (2 + w): log(1 + w) = 2 atanh t and w - 2t = t w, so
// w - log(1 + w) = t w - 2 (t^3 / 3 + t^5 / 5 + ...), terms of one sign
// falling by t^2 <= 1/9 (the series in w itself falls by only w).
inline float log1p_excess(float w) {
  if (metal::fabs(w) < 0.5f) {
    const float t = w / (2.0f + w), t2 = t * t;
    float tail = 0.0f;  // sum over k >= 1 of t^(2k) / (2k + 1), to t^18
    for (int k = 9; k >= 1; --k) {
      tail = t2 * (1.0f / float(2 * k + 1) + tail);
    }
    return t * w - 2.0f * t * tail;
  }
  return w - log1p_float(w);
}

// (1 + t) log(1 + t) - t for t >= -1, without the cancellation near t = 0:
// a count's deviance from a mean mu is mu phi((count - mu) / mu).
inline float deviance_phi(float t) {
  if (metal::fabs(t) < 0.1f) {
    // sum over n >= 2 of (-t)^n / (n (n - 1)), to t^9
    float sum = 0.0f;
    float power = t * t;
    for (int n = 2; n <= 9; ++n) {
      sum += ((n & 1) != 0 ? -power : power) / float(n * (n - 1));
      power *= t;
    }
    return sum;
  }
  if (t == -1.0f) {
    return 1.0f;  // the limit: 0 log 0 = 0
  }
  return (1.0f + t) * log1p_float(t) - t;
}

// Stirling's correction for y > 0: log Gamma(y + 1) less
// (y + 1/2) log y - y + log(2 pi) / 2. From y = 10 the series to y**-5
// (error under 1e-9); below, Gamma's recurrence from y + j >= 10, whose
// products hold in float (at most 20**10).
inline float stirling_correction(float y) {
  const int shift = y < 10.0f ? int(metal::ceil(10.0f - y)) : 0;
  const float z = y + float(shift);
  const float inverse = 1.0f / z, inverse2 = inverse * inverse;
  const float series = inverse * (1.0f / 12.0f - inverse2 * (1.0f / 360.0f - inverse2 * (1.0f / 1260.0f)));
  if (shift == 0) {
    return series;
  }
  float product = 1.0f;
  for (int i = 1; i <= shift; ++i) {
    product *= y + float(i);
  }
  // log Gamma(y + 1) = log Gamma(z + 1) - log((y + 1) ... z)
  return (z + 0.5f) * metal::log(z) - z + series - metal::log(product) - (y + 0.5f) * metal::log(y) + y;
}

// log of the Poisson probability of k events at rate lam > 0 (k >= 0).
inline float poisson_log_pmf(float k, float lam) {
  if (k == 0.0f) {
    return -lam;
  }
  return -lam * deviance_phi((k - lam) / lam) - 0.5f * metal::log(k) - 0.91893853f - stirling_correction(k);
}

// log of the binomial probability of k successes in n trials of
// probability p (q = 1 - p), for 0 <= k <= n and 0 < p < 1; n and k may be
// non-integers (Gamma's binomial coefficient), as the CPU's tensors allow.
inline float binomial_log_pmf(float k, float n, float p, float q) {
  if (k == 0.0f) {
    return n * log1p_float(-p);
  }
  if (k == n) {
    return n * metal::log(p);
  }
  const float mean = n * p, mean_failures = n * q;
  const float deviance =
      mean * deviance_phi((k - mean) / mean) + mean_failures * deviance_phi((mean - k) / mean_failures);
  const float rest = n - k;
  return stirling_correction(n) - stirling_correction(k) - stirling_correction(rest) - 0.91893853f +
         0.5f * (metal::log(n) - metal::log(k) - metal::log(rest)) - deviance;
}

}  // namespace mps_ops
