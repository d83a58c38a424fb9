// Parameters shared by svd.metal and its host stub (csrc/operations/svd.mm):
// one definition, one layout. Plain C++ that MSL and the host compiler both
// accept.
#pragma once

namespace mps_ops {

// _linalg_svd: one threadgroup per matrix, of the tall problem B (rows >=
// columns: A, or A^T where A is wide), column-major in the workspace.
struct svd_params {
  int rows;
  int columns;
  int left_columns;  // the left vectors written: columns, or rows (full_matrices)
  int want_vectors;  // 0: singular values only
  int sweep_limit;   // Jacobi sweeps before the kernel reports no convergence
};

// Threads of a group at most: a power of two (the tree reductions halve
// it), whole SIMD groups.
enum { svd_max_threads = 256 };

// Floats per pair of columns in the plan: cos, sin (room, after the sweeps,
// for each column's rank).
enum { svd_pair_floats = 2 };

}  // namespace mps_ops
