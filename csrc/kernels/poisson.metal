// poisson (a fill for torch 2.9 to 2.13; the host stub in
// csrc/operations/poisson.mm): one thread per rate draws a Poisson count,
// from its own stream of Philox4x32-10 words (mps_ops/philox.h; counter:
// the element's index and a draw number; key: four words the host drew from
// the generator). The CPU's algorithms, in float: below a rate of 10 the
// product of uniforms (Knuth), from 10 Hormann's transformed rejection with
// squeeze (PTRS, "The transformed rejection method for generating Poisson
// random variables", 1993). Its acceptance test compares log V with
// log p(k) in the form float holds (mps_ops/log_probability.h); uniforms on
// (0, 1) (an exact 0 would make log V -inf and accept any count). A rate
// that is negative or NaN raises the host's KernelFlag (the CPU's
// RuntimeError); an infinite rate gives infinity (the CPU's converts it to
// an integer: garbage).
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/log_probability.h>
#include <mps_ops/no_params.h>
#include <mps_ops/philox.h>
using namespace metal;

namespace {

MPS_OPS_STREAM_SAMPLER float knuth(float lam, thread mps_ops::uniform_stream& u) {
  const float limit = exp(-lam);
  float count = 0.0f;
  float product = u.next();
  while (product > limit) {
    count += 1.0f;
    product *= u.next();
  }
  return count;
}

MPS_OPS_STREAM_SAMPLER float ptrs(float lam, thread mps_ops::uniform_stream& u) {
  const float root = sqrt(lam);
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
    if (log(V) + log_inverse_alpha - log(a / (us * us) + b) <= mps_ops::poisson_log_pmf(k, lam)) {
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
  mps_ops::uniform_stream u = mps_ops::open_uniform_stream(index, key);
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
