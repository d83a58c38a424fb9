// Parameters shared by cholesky_solve.metal and its host stub
// (csrc/operations/cholesky_solve.mm): one definition, one layout. Plain C++
// that MSL and the host compiler both accept.
#pragma once

namespace mps_ops {

// One thread per column of the result (a column-major copy of B, batches
// contiguous); the factor read through its strides, in elements (a batch
// stride of 0 where one factor serves every batch).
struct cholesky_solve_params {
  int n;
  int columns;        // B's columns (right-hand sides)
  long batch_stride;  // the factor's
  // Steps between the triangular factor's entries F(i, j), i >= j, along i
  // and along j: a lower factor's row and column strides, an upper one's
  // column and row strides (U = F^T).
  long along_rows;
  long along_columns;
};

}  // namespace mps_ops
