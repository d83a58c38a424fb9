// Parameters shared by isin.metal and its host stub (csrc/operations/isin.mm):
// one definition, one layout. Plain C++ that MSL and the host compiler both
// accept (no address spaces, no Metal types).
#pragma once

namespace mps_ops {

struct isin_params {
  unsigned count;   // elements in this dispatch
  unsigned tests;   // test elements
  unsigned sorted;  // the test elements are sorted (their NaNs at one end): binary search, else a scan
  unsigned invert;  // the result is "not in"
};

}  // namespace mps_ops
