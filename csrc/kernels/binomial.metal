// binomial (a fill for torch 2.9 to 2.13; the host stub in
// csrc/operations/binomial.mm): one thread per element draws the number of
// successes in `count` trials of probability `prob`, from its own stream of
// open uniforms (mps_ops::uniform_stream: Philox4x32-10 keyed by four words
// the host drew from the generator). The CPU's choice of algorithm, in
// float: with p the smaller of prob and 1 - prob (counting failures where
// prob > 1/2), below count * p = 10 geometric waiting times (each trial to
// the next success, ceil(log U / log(1 - p)), summed while within count);
// from 10 Hormann's transformed rejection (BTRS, "The generation of
// binomial random variates", 1993), whose acceptance test compares log V
// with log f(k) - log f(m) at the mode m, in the form float holds
// (mps_ops/log_probability.h: the CPU's Stirling terms cancel to nothing in
// float past count 1e6). As the CPU: a count <= 0 or prob <= 0 gives 0,
// prob >= 1 the count, a NaN prob NaN; non-integer counts are taken as
// they come. Where the CPU never returns (a NaN count: its loop never ends)
// or returns garbage (an infinite count), ours gives NaN and infinity.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/log_probability.h>
#include <mps_ops/no_params.h>
#include <mps_ops/philox.h>
using namespace metal;

namespace {

// Successes in n trials of probability p <= 1/2 with n p < 10: about n p + 1 draws.
MPS_OPS_STREAM_SAMPLER float waiting_times(float n, float p, thread mps_ops::uniform_stream& u) {
  const float log_q = mps_ops::log1p_float(-p);
  float successes = 0.0f;
  float trials = 0.0f;
  while (true) {
    trials += ceil(log(u.next()) / log_q);
    if (trials > n) {
      return successes;
    }
    successes += 1.0f;
  }
}

// Successes in n trials of probability p <= 1/2 with n p >= 10: about 1.2
// pairs of draws.
MPS_OPS_STREAM_SAMPLER float btrs(float n, float p, thread mps_ops::uniform_stream& u) {
  const float q = 1.0f - p;
  const float spread = sqrt(n * p * q);
  const float b = 1.15f + 2.53f * spread;
  const float a = -0.0873f + 0.0248f * b + 0.01f * p;
  const float c = n * p + 0.5f;
  const float vr = 0.92f - 4.2f / b;
  const float log_alpha = log((2.83f + 5.1f / b) * spread);
  const float mode = floor((n + 1.0f) * p);
  const float log_f_mode = mps_ops::binomial_log_pmf(mode, n, p, q);
  while (true) {
    const float U = u.next() - 0.5f;
    const float V = u.next();
    const float us = 0.5f - fabs(U);
    const float k = floor((2.0f * a / us + b) * U + c);
    if (k < 0.0f || k > n) {
      continue;
    }
    if (us >= 0.07f && V <= vr) {
      return k;
    }
    if (log(V) + log_alpha - log(a / (us * us) + b) <= mps_ops::binomial_log_pmf(k, n, p, q) - log_f_mode) {
      return k;
    }
  }
}

}  // namespace

template <typename T>
kernel void binomial(device T* out [[buffer(0)]],
                     constant T* counts [[buffer(1)]],
                     constant T* probs [[buffer(2)]],
                     constant int* key [[buffer(3)]],
                     constant mps_ops::no_params& params [[buffer(4)]],
                     uint index [[thread_position_in_grid]]) {
  const float n = float(counts[index]), prob = float(probs[index]);
  float result;
  if (isnan(n)) {
    result = n;
  } else if (n <= 0.0f || prob <= 0.0f) {
    result = 0.0f;
  } else if (prob >= 1.0f) {
    result = n;
  } else if (isnan(prob)) {
    result = prob;
  } else if (isinf(n)) {
    result = n;
  } else {
    // Failures where they are the rarer outcome (the CPU's 1 - prob, in float).
    const bool failures = prob > 0.5f;
    const float p = failures ? 1.0f - prob : prob;
    mps_ops::uniform_stream u = mps_ops::open_uniform_stream(index, key);
    const float k = n * p >= 10.0f ? btrs(n, p, u) : waiting_times(n, p, u);
    result = failures ? n - k : k;
  }
  out[index] = static_cast<T>(result);
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, binomial, dense)
