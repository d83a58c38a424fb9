// Parameters shared by lu_solve.metal and its host stub
// (csrc/operations/lu_solve.mm): one definition, one layout. Plain C++ that
// MSL and the host compiler both accept.
#pragma once

namespace mps_ops {

// One threadgroup per lu_solve_group_columns right-hand sides of a matrix
// (each factor entry read once for all of them): op(A) x = c with A = P L U
// from linalg_lu_factor (LU packed, pivots 1-based as LAPACK's), op(A) = A
// or A^T. The right-hand sides are the result's columns: n contiguous
// floats each, `columns` per matrix, matrices one after another.
enum { lu_solve_max_threads = 256, lu_solve_group_columns = 4 };

struct lu_solve_params {
  int n;
  int columns;
  int transposed;  // 1: A^T x = c
  long groups_per_matrix;  // columns / lu_solve_group_columns, rounded up
  long lu_batch_stride;
  long lu_row_stride;
  long lu_column_stride;
};

}  // namespace mps_ops
