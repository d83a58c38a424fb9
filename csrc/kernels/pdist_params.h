// Parameters shared by pdist.metal and its host stub
// (csrc/operations/pdist.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

namespace mps_ops {

// _pdist_forward / _pdist_backward: n rows of m elements, the norm's p;
// the forward's n (n - 1) / 2 pairs, `share` threads each (row_threads).
struct pdist_params {
  float p;
  unsigned int share;
  long n;
  long m;
  long pairs;
};

// _cdist_backward: x1 of r1 rows and x2 of r2 rows, m elements each, per
// batch entry; the norm's p.
struct cdist_params {
  float p;
  long r1;
  long r2;
  long m;
};

}  // namespace mps_ops
