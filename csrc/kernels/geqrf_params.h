// Parameters shared by geqrf.metal and its host stub (csrc/operations/qr.mm):
// one definition, one layout. Plain C++ that MSL and the host compiler both
// accept.
#pragma once

namespace mps_ops {

// geqrf: one threadgroup per m x n matrix, factored in place in the
// workspace (a column-major copy of A, batches contiguous), LAPACK's layout:
// R on and above the diagonal, the reflectors' vectors below it.
struct geqrf_params {
  int rows;
  int columns;
};

// Threads of a group at most: a power of two (the tree reduction halves
// it), whole SIMD groups.
enum { geqrf_max_threads = 256 };

}  // namespace mps_ops
