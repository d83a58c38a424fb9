// The parameter struct of kernels whose functor or reducer needs nothing but
// the elements. Every element-wise and reduction kernel takes a params slot
// all the same (one kernel shape, not a twin without it); the host binds an
// empty one. Plain C++ that MSL and the host compiler both accept.
#pragma once

namespace mps_ops {

struct no_params {
  int unused;
};

}  // namespace mps_ops
