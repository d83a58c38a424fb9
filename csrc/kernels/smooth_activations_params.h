// Parameters shared by smooth_activations.metal and its host stub
// (csrc/operations/smooth_activations.mm): one definition, one layout. Plain
// C++ that MSL and the host compiler both accept (no address spaces, no
// Metal types).
#pragma once

namespace mps_ops {

// softplus and its backward: x passes (its gradient passes) where
// x * beta > threshold; both in float, as the CPU converts them.
struct softplus_params {
  float beta;
  float threshold;
};

}  // namespace mps_ops
