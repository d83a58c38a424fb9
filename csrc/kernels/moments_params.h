// Parameters shared by moments.metal and its host stub
// (csrc/operations/moments.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

namespace mps_ops {

// var / std: divide the sum of squares by max(0, n - correction).
struct moments_params {
  float correction;
  int take_sqrt;
};

}  // namespace mps_ops
