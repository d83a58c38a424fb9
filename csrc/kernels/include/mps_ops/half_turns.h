// Sine, cosine and tangent of angles in half turns (of pi x), for the
// samplers' angles (Box and Muller's 2 pi U, Cauchy's pi (U - 1/2)). They
// reduce x exactly to a quadrant q and w = x - q / 2 in [-1/4, 1/4], then
// evaluate one polynomial each for sin(pi w) and cos(pi w), where a precise
// sin, cos or tan of the float angle first rounds pi x (fatal for Cauchy's
// tails: tan near pi / 2 turns that rounding into an O(1) error) and then
// pays a general range reduction (on an NVIDIA GPU, libdevice's carries a
// slow path for huge arguments).
//   - The reduction is exact: q = rint(2 x), and x - q / 2 is exact by
//     Sterbenz's lemma (x and q / 2 are within a factor of 2 for q != 0).
//   - The polynomials are special_math.h's kSinPiTail and kCosPiTail
//     (tools/fit_special_coefficients.py). sin's leading coefficient, pi,
//     is split in two floats, so w pi keeps the precision float's pi lacks.
//     test_random_fills checks cauchy_'s tan to 3 ulps over 4 million draws.
// Domain: |x| < 2**22 (the quadrant is taken from an int); every use here
// passes |x| <= 2.
#pragma once
#include <metal_stdlib>
#include <mps_ops/special_math.h>

namespace mps_ops {

struct sin_cos {
  float sin, cos;
};

// sin(pi w) and cos(pi w) for |w| <= 1/4.
inline sin_cos sin_cos_quarter(float w) {
  const float w2 = w * w;
  const float sin_tail = w2 * special_detail::horner(w2, special_detail::kSinPiTail, 3);
  const float pi_low = -8.742277657e-08f;  // pi - float(pi)
  const float sin_value = metal::fma(w, 3.141592741e+00f, w * (pi_low + sin_tail));
  const float cos_value = metal::fma(w2, special_detail::horner(w2, special_detail::kCosPiTail, 4), 1.0f);
  return sin_cos{sin_value, cos_value};
}

// x as q quarter turns plus w half turns, |w| <= 1/4, exactly.
struct quadrant_split {
  int quadrant;
  float w;
};

inline quadrant_split split_quadrant(float x) {
  const float q = metal::rint(2.0f * x);
  return quadrant_split{int(q), x - 0.5f * q};
}

// sin(pi x) and cos(pi x): a quadrant q turns (sin, cos) of pi w by q
// quarter turns: q = 1 gives (cos, -sin), 2 (-sin, -cos), 3 (-cos, sin).
inline sin_cos sin_cos_half_turns(float x) {
  const quadrant_split split = split_quadrant(x);
  const sin_cos reduced = sin_cos_quarter(split.w);
  const bool swap = (split.quadrant & 1) != 0;
  const float sin_value = swap ? reduced.cos : reduced.sin;
  const float cos_value = swap ? reduced.sin : reduced.cos;
  return sin_cos{(split.quadrant & 2) != 0 ? -sin_value : sin_value,
                 ((split.quadrant + 1) & 2) != 0 ? -cos_value : cos_value};
}

// tan(pi x): tan(pi w), or -cot(pi w) in an odd quadrant (tan's period is
// one half turn). The quotient's terms are selected first, so every thread
// of a SIMD group runs the one division (two divisions, one per side of a
// branch, would run both wherever the group's quadrants differ).
inline float tan_half_turns(float x) {
  const quadrant_split split = split_quadrant(x);
  const sin_cos reduced = sin_cos_quarter(split.w);
  const bool odd = (split.quadrant & 1) != 0;
  return (odd ? -reduced.cos : reduced.sin) / (odd ? reduced.sin : reduced.cos);
}

}  // namespace mps_ops
