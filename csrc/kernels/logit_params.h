// Parameters shared by logit.metal and its host stub
// (csrc/operations/logit.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

namespace mps_ops {

// logit: inputs are clamped to [eps, 1 - eps] when eps >= 0 (eps < 0: none);
// logit_backward: the gradient is 0 outside [eps, 1 - eps] when eps >= 0.
struct logit_params {
  float eps;
};

}  // namespace mps_ops
