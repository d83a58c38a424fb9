// Parameters shared by random_fills.metal and its host stub
// (csrc/operations/random_fills.mm): one definition, one layout. Plain C++
// that MSL and the host compiler both accept.
#pragma once

namespace mps_ops {

// cauchy_: location = median, scale = sigma; log_normal_: the normal's mean
// and std; geometric_: scale = 1 / log(1 - p), worked out in double on the
// host.
struct random_fill_params {
  float location;
  float scale;
  unsigned int numel;
};

// Elements a thread fills: eight Philox blocks of 4 words.
enum : unsigned int { random_fill_elements = 32 };

// The threads a fill of numel elements dispatches.
inline unsigned int random_fill_threads(unsigned int numel) {
  return numel / random_fill_elements + (numel % random_fill_elements != 0 ? 1u : 0u);
}

}  // namespace mps_ops
