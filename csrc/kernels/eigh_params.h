// Parameters shared by eigh.metal and its host stub (csrc/operations/eigh.mm):
// one definition, one layout. Plain C++ that MSL and the host compiler both
// accept.
#pragma once

namespace mps_ops {

// _linalg_eigh: one threadgroup per n x n symmetric matrix. The workspace
// holds a column-major copy of A (its UPLO triangle is what counts), then
// the rotated matrix; `rotations` the accumulated rotations (when vectors
// are wanted); `pairs` each step's rotations, four floats per pair of
// indices, then each eigenvalue's rank.
struct eigh_params {
  int n;
  int lower;         // 1: A's lower triangle holds the matrix (UPLO "L"), 0: its upper
  int want_vectors;  // 0: eigenvalues only
  int sweep_limit;   // Jacobi sweeps before the kernel reports no convergence
};

// Threads of a group at most: a power of two (the tree reductions halve
// it), whole SIMD groups.
enum { eigh_max_threads = 256 };

// Floats per pair of indices in `pairs`: cos, sin, the new A(p, p), A(q, q).
enum { eigh_pair_floats = 4 };

}  // namespace mps_ops
