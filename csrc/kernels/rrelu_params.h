// Parameters shared by rrelu.metal and its host stub
// (csrc/operations/rrelu.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

namespace mps_ops {

// rrelu_with_noise: training draws each slope from the noise tensor (filled
// on the host's generator); evaluation is leaky_relu with the mean slope.
struct rrelu_params {
  float slope;  // evaluation: (lower + upper) / 2
  float lower;  // training: slopes lower + u * range, u uniform on [0, 1)
  float range;
  int training;
  unsigned int count;  // elements (the host allows no more than 2**32 - 1)
};

}  // namespace mps_ops
