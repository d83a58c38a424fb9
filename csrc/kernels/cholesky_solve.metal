// _cholesky_solve_helper: X = (F F^T)^-1 B for a Cholesky factor F, lower
// (L) or the transpose of an upper one (U^T) (a fill for torch 2.9 to 2.11,
// where torch.cholesky_solve raised on a Mac; host stubs in
// csrc/operations/cholesky_solve.mm), and cholesky_inverse, the same solve
// of the identity (below). float32, as the CPU's LAPACK potrs
// with float64 and complex left out.
//
// One thread per column of B: F y = b by forward substitution, then
// F^T x = y backward, each entry's sum in float in order of j, then one
// division by the diagonal (LAPACK's trsm rounds in another order: the
// tests compare within float's tolerance). The columns are independent, so
// there are no barriers; a zero diagonal gives the infinities and NaNs of
// the divisions, as the CPU's potrs does (it checks nothing).
#include <metal_stdlib>
#include <mps_ops/instantiate.h>

#include "cholesky_solve_params.h"
using namespace metal;

namespace {

// Column `column` of batch `batch`'s right-hand sides, solved in place.
template <typename T>
inline void solve_column(device T* b, constant T* factor, mps_ops::cholesky_solve_params p, uint column, uint batch) {
  device T* x = b + (long(batch) * p.columns + long(column)) * p.n;  // column-major
  constant T* f = factor + long(batch) * p.batch_stride;
  // F(i, j) for i >= j is f[i * p.along_rows + j * p.along_columns].
  for (int i = 0; i < p.n; ++i) {
    float sum = float(x[i]);
    for (int j = 0; j < i; ++j) {
      sum -= float(f[i * p.along_rows + j * p.along_columns]) * float(x[j]);
    }
    x[i] = T(sum / float(f[i * (p.along_rows + p.along_columns)]));
  }
  // F^T(i, j) = F(j, i), j > i.
  for (int i = p.n - 1; i >= 0; --i) {
    float sum = float(x[i]);
    for (int j = i + 1; j < p.n; ++j) {
      sum -= float(f[j * p.along_rows + i * p.along_columns]) * float(x[j]);
    }
    x[i] = T(sum / float(f[i * (p.along_rows + p.along_columns)]));
  }
}

}  // namespace

template <typename T>
kernel void cholesky_solve(device T* b [[buffer(0)]],
                           constant T* factor [[buffer(1)]],
                           constant mps_ops::cholesky_solve_params& params [[buffer(2)]],
                           uint2 position [[thread_position_in_grid]]) {
  solve_column(b, factor, params, position.x, position.y);
}

// cholesky_inverse (a fill for torch 2.9 and 2.10): the same solve of the
// identity's columns (the host's copy), and a KernelFlag raised where a
// batch's factor has a zero on its diagonal (the CPU's LinAlgError; the
// host finds the first one). The first column's thread of each batch checks.
template <typename T>
kernel void cholesky_inverse(device T* b [[buffer(0)]],
                             device int* zero_diagonal [[buffer(1)]],
                             constant T* factor [[buffer(2)]],
                             constant mps_ops::cholesky_solve_params& params [[buffer(3)]],
                             uint2 position [[thread_position_in_grid]]) {
  const mps_ops::cholesky_solve_params p = params;
  if (position.x == 0) {
    constant T* f = factor + long(position.y) * p.batch_stride;
    for (int i = 0; i < p.n; ++i) {
      if (f[i * (p.along_rows + p.along_columns)] == T(0)) {
        *zero_diagonal = 1;
        break;
      }
    }
  }
  solve_column(b, factor, p, position.x, position.y);
}

MPS_OPS_INSTANTIATE_FOR_TYPE(cholesky_solve, dense, float)
MPS_OPS_INSTANTIATE_FOR_TYPE(cholesky_inverse, dense, float)
