// The Gamma samplers (fills for torch 2.9 to 2.11, _sample_dirichlet to
// 2.12; the host stubs in csrc/operations/gamma.mm): _standard_gamma draws
// Gamma(alpha, 1) per element, _sample_dirichlet normalises such draws
// along the last dim (torch.distributions' Gamma, Beta, Chi2, StudentT and
// Dirichlet sample through them). Each element draws from its own stream of
// open uniforms (mps_ops::uniform_stream, keyed by philox_key's words);
// normals by Box and Muller's transform, two per pair of uniforms.
//
// The CPU's algorithm, in float: Marsaglia and Tsang's ("A simple method
// for generating gamma variables", 2000), boosted below alpha = 1 by
// G(alpha) = G(alpha + 1) U^(1 / alpha). Its log test, log U < x^2 / 2 +
// d (1 - v + log v), cancels in float for large d (v near 1): written with
// w = v - 1 as d (w - log(1 + w)), whose series holds near 0. As the CPU:
// a sample below the dtype's smallest normal comes out as that (alpha 0,
// negative or NaN too); an infinite alpha gives infinity.
//
// Dirichlet draws stay in log space: the CPU draws in double to keep small
// alphas' draws (U^(1 / alpha)) from underflowing; float's logs do not
// underflow at all. A row's shares are exp(log G - max) over their sum,
// clamped to [smallest normal, 1 - ulp] as the CPU's; a draw below double's
// smallest normal counts as that (the CPU's clamp), so a row of such draws
// shares equally.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/log_probability.h>
#include <mps_ops/no_params.h>
#include <mps_ops/philox.h>
#include "gamma_params.h"
using namespace metal;

namespace {

struct gamma_sampler {
  mps_ops::uniform_stream u;
  float spare_normal;
  bool has_spare;

  float uniform() { return u.next(); }

  float normal() {
    if (has_spare) {
      has_spare = false;
      return spare_normal;
    }
    const float u1 = u.next();
    const mps_ops::normal_pair pair = mps_ops::box_muller(u1, u.next());
    spare_normal = pair.second;
    has_spare = true;
    return pair.first;
  }
};

inline gamma_sampler open_gamma_sampler(uint element, constant int* key) {
  return gamma_sampler{mps_ops::open_uniform_stream(element, key), 0.0f, false};
}

// A Gamma(alpha, 1) draw for 0 < alpha < inf as exp(log_scale) * body (the
// boost's factor in log space: U^(1 / alpha) underflows float for small alpha).
struct gamma_draw {
  float log_scale;
  float body;
};

MPS_OPS_STREAM_SAMPLER gamma_draw draw_gamma(float alpha, thread gamma_sampler& s) {
  float log_scale = 0.0f;
  if (alpha < 1.0f) {
    log_scale = log(s.uniform()) / alpha;
    alpha += 1.0f;
  }
  const float d = alpha - 1.0f / 3.0f;
  const float c = 1.0f / sqrt(9.0f * d);
  while (true) {
    float x, w;
    do {
      x = s.normal();
      w = c * x;
    } while (w <= -1.0f);  // v = (1 + w)^3 must be positive
    const float v_less_1 = w * (3.0f + w * (3.0f + w));
    const float u = s.uniform();
    const float xx = x * x;
    if (u < 1.0f - 0.0331f * xx * xx || log(u) < 0.5f * xx - d * mps_ops::log1p_excess(v_less_1)) {
      return gamma_draw{log_scale, d * (1.0f + v_less_1)};
    }
  }
}

// numeric_limits<T>::min() and the largest T below 1, spelled per type
// (the three compilers agree on these literals).
template <typename T> struct float_bounds;
template <> struct float_bounds<float> {
  static float smallest_normal() { return 1.17549435e-38f; }
  static float below_one() { return 0.99999994f; }
};
template <> struct float_bounds<half> {
  static float smallest_normal() { return 6.10351562e-05f; }
  static float below_one() { return 0.99951172f; }
};
template <> struct float_bounds<bfloat> {
  static float smallest_normal() { return 1.17549435e-38f; }
  static float below_one() { return 0.99609375f; }
};

// value in T, at least T's smallest normal (NaN too: the CPU's std::max).
template <typename T>
inline T at_least_smallest_normal(float value) {
  const T rounded = static_cast<T>(value);
  const T smallest = static_cast<T>(float_bounds<T>::smallest_normal());
  return rounded > smallest ? rounded : smallest;
}

// log of double's smallest normal: the CPU's floor under each Dirichlet draw.
constant float log_smallest_double = -708.396419f;

MPS_OPS_STREAM_SAMPLER float dirichlet_log_draw(float alpha, uint element, constant int* key) {
  if (!(alpha > 0.0f)) {  // 0, negative or NaN: the CPU's draw is 0 or NaN, clamped
    return log_smallest_double;
  }
  if (isinf(alpha)) {
    return alpha;
  }
  gamma_sampler s = open_gamma_sampler(element, key);
  const gamma_draw g = draw_gamma(alpha, s);
  return max(g.log_scale + log(g.body), log_smallest_double);
}

}  // namespace

template <typename T>
kernel void standard_gamma(device T* out [[buffer(0)]],
                           constant T* alphas [[buffer(1)]],
                           constant int* key [[buffer(2)]],
                           constant mps_ops::no_params& params [[buffer(3)]],
                           uint index [[thread_position_in_grid]]) {
  const float alpha = float(alphas[index]);
  float sample = 0.0f;  // 0, negative or NaN: the smallest normal, as the CPU's clamp gives
  if (isinf(alpha) && alpha > 0.0f) {
    sample = alpha;
  } else if (alpha > 0.0f) {
    gamma_sampler s = open_gamma_sampler(index, key);
    const gamma_draw g = draw_gamma(alpha, s);
    sample = exp(g.log_scale) * g.body;
  }
  out[index] = at_least_smallest_normal<T>(sample);
}

// row_lanes lanes of a SIMD group per row (the host's power of two <= 32,
// for the row length): each lane draws its elements' logs into log_draws
// with a running maximum and sum of exps, the lanes combine theirs by
// shuffles within the row's lanes, and each lane writes its own elements'
// shares (reading back what it wrote: no barrier).
template <typename T>
kernel void sample_dirichlet(device T* out [[buffer(0)]],
                             constant T* alphas [[buffer(1)]],
                             device float* log_draws [[buffer(2)]],
                             constant int* key [[buffer(3)]],
                             constant mps_ops::dirichlet_params& p [[buffer(4)]],
                             uint position [[thread_position_in_grid]]) {
  const uint row = position / p.row_lanes, lane = position % p.row_lanes;
  const bool active = row < p.rows;
  const ulong start = ulong(row) * p.row_length;
  // -FLT_MAX, not -inf: an idle lane's exp(top - top) stays 1 times a sum of 0.
  float top = -numeric_limits<float>::max(), sum = 0.0f;
  for (uint k = lane; active && k < p.row_length; k += p.row_lanes) {
    const uint element = uint(start + k);
    const float value = dirichlet_log_draw(float(alphas[element]), element, key);
    log_draws[element] = value;
    if (value > top) {
      sum = sum * exp(top - value) + 1.0f;
      top = value;
    } else {
      sum += exp(value - top);
    }
  }
  for (uint mask = p.row_lanes / 2; mask > 0; mask /= 2) {
    const float other_top = simd_shuffle_xor(top, ushort(mask));
    const float other_sum = simd_shuffle_xor(sum, ushort(mask));
    const float joint = max(top, other_top);
    sum = sum * exp(top - joint) + other_sum * exp(other_top - joint);
    top = joint;
  }
  const float bound = float_bounds<T>::below_one();
  for (uint k = lane; active && k < p.row_length; k += p.row_lanes) {
    const uint element = uint(start + k);
    const T share = at_least_smallest_normal<T>(exp(log_draws[element] - top) / sum);
    out[element] = share < static_cast<T>(bound) ? share : static_cast<T>(bound);
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, standard_gamma, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, sample_dirichlet, dense)
