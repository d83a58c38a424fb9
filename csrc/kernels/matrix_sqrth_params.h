// Parameters shared by matrix_sqrth.metal and its host stub
// (csrc/operations/matrix_sqrth.mm): one definition, one layout. Plain C++
// that MSL and the host compiler both accept.
#pragma once

namespace mps_ops {

// X = Q diag(sqrt(max(L, 0))) Q^T for each matrix: one thread per element of
// X (contiguous, n x n matrices one after another); Q and L as eigh returns
// them, strides in elements.
struct sqrth_product_params {
  int n;
  long matrices;
  long vectors_batch_stride;
  long vectors_row_stride;
  long vectors_column_stride;
  long values_batch_stride;
};

}  // namespace mps_ops
