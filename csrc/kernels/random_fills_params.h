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

}  // namespace mps_ops
