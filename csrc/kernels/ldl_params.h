// Parameters shared by ldl.metal and its host stub (csrc/operations/ldl.mm):
// one definition, one layout. Plain C++ that MSL and the host compiler both
// accept.
#pragma once

namespace mps_ops {

// linalg_ldl_factor_ex: one threadgroup per matrix, each matrix n x n
// column-major in LD (already a copy of A), batches contiguous.
struct ldl_factor_params {
  int n;
};

// linalg_ldl_solve: one thread per column of the result (a column-major
// copy of B broadcast to the result's batch), strides in elements.
struct ldl_solve_params {
  int n;
  int columns;            // B's columns (right-hand sides)
  long ld_batch_stride;   // 0 where one LD serves every batch
  long ld_row_stride;
  long ld_column_stride;
  long pivots_batch_stride;
  long pivots_stride;
};

// Threads of a factorization's group at most: a power of two (its tree
// reductions halve it), whole SIMD groups. (An enum: MSL has no program-scope
// constexpr outside the constant address space.)
enum { ldl_factor_max_threads = 256 };

}  // namespace mps_ops
