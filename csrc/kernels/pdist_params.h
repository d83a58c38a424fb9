// Parameters shared by pdist.metal and its host stub
// (csrc/operations/pdist.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

namespace mps_ops {

// _pdist_forward / _pdist_backward: n rows of m elements, the norm's p.
struct pdist_params {
  float p;
  long n;
  long m;
};

}  // namespace mps_ops
