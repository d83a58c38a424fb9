// linalg_matrix_sqrth's last step: X = Q diag(sqrt(max(L, 0))) Q^T from the
// eigendecomposition torch's eigh gives (csrc/operations/matrix_sqrth.mm).
// One thread per element of X sums over the eigenpairs; each term is
// sqrt(L_k) * (Q_ik * Q_jk), whose product is the same for (i, j) and
// (j, i), so X is exactly symmetric. An eigenvalue below zero (rounding of a
// semi-definite matrix, or an indefinite one) counts as zero, as the CPU's
// clamp makes it.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>

#include "matrix_sqrth_params.h"
using namespace metal;

template <typename T>
kernel void sqrth_product(device T* out [[buffer(0)]],
                          constant T* vectors [[buffer(1)]],
                          constant T* values [[buffer(2)]],
                          constant mps_ops::sqrth_product_params& p [[buffer(3)]],
                          uint index [[thread_position_in_grid]]) {
  const long square = long(p.n) * long(p.n);
  if (long(index) >= square * p.matrices) {
    return;
  }
  const long matrix = long(index) / square;
  const long element = long(index) - matrix * square;
  const long i = element / p.n;
  const long j = element - i * p.n;
  constant T* q = vectors + matrix * p.vectors_batch_stride;
  constant T* l = values + matrix * p.values_batch_stride;
  float sum = 0.0f;
  for (long k = 0; k < p.n; ++k) {
    const float qi = float(q[i * p.vectors_row_stride + k * p.vectors_column_stride]);
    const float qj = float(q[j * p.vectors_row_stride + k * p.vectors_column_stride]);
    sum += sqrt(max(float(l[k]), 0.0f)) * (qi * qj);
  }
  out[index] = T(sum);
}

MPS_OPS_INSTANTIATE_FOR_TYPE(sqrth_product, dense, float)
