// Parameters shared by eig.metal and its host stub (csrc/operations/eig.mm):
// one definition, one layout. Plain C++ that MSL and the host compiler both
// accept.
#pragma once

namespace mps_ops {

// linalg_eig / linalg_eigvals: one threadgroup per n x n matrix. The
// matrices (a column-major copy of A, batches contiguous) are the kernel's
// workspace; it leaves the real Schur form's eigenvectors there.
struct eig_params {
  int n;
  int want_vectors;     // 0: eigenvalues only (no Schur vectors, no eigenvectors)
  int iteration_limit;  // QR sweeps allowed between two deflations
};

// Threads of a group at most: a power of two (the tree reductions halve
// it), whole SIMD groups. (An enum: MSL has no program-scope constexpr
// outside the constant address space.)
enum { eig_max_threads = 256 };

}  // namespace mps_ops
