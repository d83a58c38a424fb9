// linalg_lu_solve (csrc/operations/lu_solve.mm): solves op(A) x = c for each
// right-hand side, A = P L U as linalg_lu_factor packs it (L unit lower
// below the diagonal, U on and above it, pivots the 1-based row
// interchanges LAPACK's getrf made in order). One thread per right-hand
// side, in place in the result (a copy of the right-hand sides):
//   A x = c:   interchanges in order, then L y = c forward, U x = y back;
//   A^T x = c: U^T y = c forward, L^T w = y back, then the interchanges in
//              reverse order (x = P w).
// Sums in float, each a dot product in index order (the CPU's BLAS trsm
// takes its own order, so near the float limit which partial sums overflow
// differs: test_edge_values.py). A zero on U's diagonal divides by zero, as
// LAPACK's getrs does (it checks nothing).
#include <metal_stdlib>
#include <mps_ops/instantiate.h>

#include "lu_solve_params.h"
using namespace metal;

// F(i, j): the packed factors' entry.
template <typename T>
inline float factor_entry(constant T* f, constant mps_ops::lu_solve_params& p, int i, int j) {
  return float(f[long(i) * p.lu_row_stride + long(j) * p.lu_column_stride]);
}

template <typename T>
kernel void lu_solve(device T* result [[buffer(0)]],
                     constant T* lu [[buffer(1)]],
                     constant int* pivots [[buffer(2)]],
                     constant mps_ops::lu_solve_params& p [[buffer(3)]],
                     uint index [[thread_position_in_grid]]) {
  if (long(index) >= p.right_hand_sides) {
    return;
  }
  const int n = p.n;
  const long matrix = long(index) / p.columns;
  device T* x = result + long(index) * n;
  constant T* f = lu + matrix * p.lu_batch_stride;
  constant int* interchanges = pivots + matrix * n;
  if (p.transposed == 0) {
    for (int i = 0; i < n; ++i) {
      const int other = interchanges[i] - 1;
      if (other != i) {
        const T held = x[i];
        x[i] = x[other];
        x[other] = held;
      }
    }
    for (int i = 1; i < n; ++i) {
      float sum = float(x[i]);
      for (int j = 0; j < i; ++j) {
        sum -= factor_entry(f, p, i, j) * float(x[j]);
      }
      x[i] = T(sum);
    }
    for (int i = n - 1; i >= 0; --i) {
      float sum = float(x[i]);
      for (int j = i + 1; j < n; ++j) {
        sum -= factor_entry(f, p, i, j) * float(x[j]);
      }
      x[i] = T(sum / factor_entry(f, p, i, i));
    }
    return;
  }
  for (int i = 0; i < n; ++i) {
    float sum = float(x[i]);
    for (int j = 0; j < i; ++j) {
      sum -= factor_entry(f, p, j, i) * float(x[j]);
    }
    x[i] = T(sum / factor_entry(f, p, i, i));
  }
  for (int i = n - 2; i >= 0; --i) {
    float sum = float(x[i]);
    for (int j = i + 1; j < n; ++j) {
      sum -= factor_entry(f, p, j, i) * float(x[j]);
    }
    x[i] = T(sum);
  }
  for (int i = n - 1; i >= 0; --i) {
    const int other = interchanges[i] - 1;
    if (other != i) {
      const T held = x[i];
      x[i] = x[other];
      x[other] = held;
    }
  }
}

MPS_OPS_INSTANTIATE_FOR_TYPE(lu_solve, dense, float)
