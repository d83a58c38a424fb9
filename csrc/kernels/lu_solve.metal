// linalg_lu_solve (csrc/operations/lu_solve.mm): solves op(A) x = c for each
// right-hand side, A = P L U as linalg_lu_factor packs it (L unit lower
// below the diagonal, U on and above it, pivots the 1-based row
// interchanges LAPACK's getrf made in order). One threadgroup per
// right-hand side, in place in the result (a copy of the right-hand sides),
// each thread owning the rows t, t + threads, ...:
//   A x = c:   interchanges in order, then L y = c forward, U x = y back;
//   A^T x = c: U^T y = c forward, L^T w = y back, then the interchanges in
//              reverse order (x = P w).
// Each substitution by columns: at step j, x_j is final (its division by
// the diagonal computed by every thread from the stored value, which no
// later step changes, and stored for all rows at the end), and every row
// still open subtracts its factor entry times x_j, so one barrier a step
// and, A's factors being column-major, a step's entries read side by side.
// Each row's sum in float, in the order of its steps (the CPU's BLAS trsm
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

// The first row after `j` among a thread's rows t, t + threads, ...
inline int first_row_after(int j, uint t, int stride) {
  const int start = int(t);
  return start > j ? start : start + ((j - start) / stride + 1) * stride;
}

// LAPACK's row interchanges, by one thread (each may move a row another
// made), in order or in reverse; the barrier publishes them.
template <typename T>
inline void interchange_rows(device T* x, constant int* interchanges, int n, bool reverse, uint t) {
  if (t == 0) {
    for (int k = 0; k < n; ++k) {
      const int i = reverse ? n - 1 - k : k;
      const int other = interchanges[i] - 1;
      if (other != i) {
        const T held = x[i];
        x[i] = x[other];
        x[other] = held;
      }
    }
  }
  threadgroup_barrier(mem_flags::mem_device);
}

template <typename T>
kernel void lu_solve(device T* result [[buffer(0)]],
                     constant T* lu [[buffer(1)]],
                     constant int* pivots [[buffer(2)]],
                     constant mps_ops::lu_solve_params& p [[buffer(3)]],
                     uint index [[threadgroup_position_in_grid]],
                     uint t [[thread_index_in_threadgroup]],
                     uint threads [[threads_per_threadgroup]]) {
  const int n = p.n;
  const int stride = int(threads);
  const long matrix = long(index) / p.columns;
  device T* x = result + long(index) * n;
  constant T* f = lu + matrix * p.lu_batch_stride;
  constant int* interchanges = pivots + matrix * n;
  if (p.transposed == 0) {
    interchange_rows(x, interchanges, n, /*reverse=*/false, t);
    // L y = c, L unit lower: column j's entries below the diagonal.
    for (int j = 0; j < n - 1; ++j) {
      const float yj = float(x[j]);
      for (int i = first_row_after(j, t, stride); i < n; i += stride) {
        x[i] = T(float(x[i]) - factor_entry(f, p, i, j) * yj);
      }
      threadgroup_barrier(mem_flags::mem_device);
    }
    // U x = y: column j's entries above the diagonal.
    for (int j = n - 1; j > 0; --j) {
      const float xj = float(x[j]) / factor_entry(f, p, j, j);
      for (int i = int(t); i < j; i += stride) {
        x[i] = T(float(x[i]) - factor_entry(f, p, i, j) * xj);
      }
      threadgroup_barrier(mem_flags::mem_device);
    }
    for (int i = int(t); i < n; i += stride) {
      x[i] = T(float(x[i]) / factor_entry(f, p, i, i));
    }
    return;
  }
  // U^T y = c, U^T lower: U's row j right of the diagonal.
  for (int j = 0; j < n - 1; ++j) {
    const float yj = float(x[j]) / factor_entry(f, p, j, j);
    for (int i = first_row_after(j, t, stride); i < n; i += stride) {
      x[i] = T(float(x[i]) - factor_entry(f, p, j, i) * yj);
    }
    threadgroup_barrier(mem_flags::mem_device);
  }
  for (int i = int(t); i < n; i += stride) {
    x[i] = T(float(x[i]) / factor_entry(f, p, i, i));
  }
  threadgroup_barrier(mem_flags::mem_device);
  // L^T w = y, L^T unit upper: L's row j left of the diagonal.
  for (int j = n - 1; j > 0; --j) {
    const float wj = float(x[j]);
    for (int i = int(t); i < j; i += stride) {
      x[i] = T(float(x[i]) - factor_entry(f, p, j, i) * wj);
    }
    threadgroup_barrier(mem_flags::mem_device);
  }
  interchange_rows(x, interchanges, n, /*reverse=*/true, t);
}

MPS_OPS_INSTANTIATE_FOR_TYPE(lu_solve, dense, float)
