// Parameters shared by sum.metal and its host caller (the margin losses'
// mean/sum pass, csrc/operations/margin_losses.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

namespace mps_ops {

// sum: the total times scale (mean: 1 / count).
struct sum_params {
  float scale;
};

}  // namespace mps_ops
