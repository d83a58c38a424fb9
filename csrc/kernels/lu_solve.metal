// linalg_lu_solve (csrc/operations/lu_solve.mm): solves op(A) x = c for each
// right-hand side, A = P L U as linalg_lu_factor packs it (L unit lower
// below the diagonal, U on and above it, pivots the 1-based row
// interchanges LAPACK's getrf made in order). One threadgroup per
// lu_solve_group_columns right-hand sides of one matrix, in place in the
// result (a copy of the right-hand sides), each thread owning the rows
// t, t + threads, ... of each:
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

// LAPACK's row interchanges of one right-hand side, by one thread (each
// may move a row another made), in order or in reverse.
template <typename T>
inline void interchange_rows(device T* x, constant int* interchanges, int n, bool reverse) {
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

// One step of a substitution over the group's `count` right-hand sides (n
// floats apart from `x`) on a thread's rows first, first + stride, ... below
// `last`: each row i less the factor entry (i, j) (or (j, i) `by_rows`),
// read once for all of them, times that right-hand side's x_j (divided by
// `divisor` where the diagonal is not a unit one).
template <typename T>
inline void subtract_column(device T* x, int n, int count, int first, int last, int stride, int j,
                            constant T* f, constant mps_ops::lu_solve_params& p,
                            bool by_rows, float divisor) {
  float xj[mps_ops::lu_solve_group_columns];
  for (int c = 0; c < count; ++c) {
    xj[c] = float(x[long(c) * n + j]) / divisor;
  }
  for (int i = first; i < last; i += stride) {
    const float entry = by_rows ? factor_entry(f, p, j, i) : factor_entry(f, p, i, j);
    for (int c = 0; c < count; ++c) {
      device T* row = x + long(c) * n + i;
      *row = T(float(*row) - entry * xj[c]);
    }
  }
}

template <typename T>
inline void divide_by_diagonal(device T* x, int n, int count, uint t, int stride, constant T* f,
                               constant mps_ops::lu_solve_params& p) {
  for (int i = int(t); i < n; i += stride) {
    const float diagonal = factor_entry(f, p, i, i);
    for (int c = 0; c < count; ++c) {
      x[long(c) * n + i] = T(float(x[long(c) * n + i]) / diagonal);
    }
  }
}

template <typename T>
kernel void lu_solve(device T* result [[buffer(0)]],
                     constant T* lu [[buffer(1)]],
                     constant int* pivots [[buffer(2)]],
                     constant mps_ops::lu_solve_params& p [[buffer(3)]],
                     uint group [[threadgroup_position_in_grid]],
                     uint t [[thread_index_in_threadgroup]],
                     uint threads [[threads_per_threadgroup]]) {
  const int n = p.n;
  const int stride = int(threads);
  const long matrix = long(group) / p.groups_per_matrix;
  const int first_column = int(long(group) % p.groups_per_matrix) * mps_ops::lu_solve_group_columns;
  const int count = min(int(mps_ops::lu_solve_group_columns), p.columns - first_column);
  device T* x = result + (matrix * p.columns + first_column) * long(n);
  constant T* f = lu + matrix * p.lu_batch_stride;
  constant int* interchanges = pivots + matrix * n;
  if (p.transposed == 0) {
    if (int(t) < count) {
      interchange_rows(x + long(t) * n, interchanges, n, /*reverse=*/false);
    }
    threadgroup_barrier(mem_flags::mem_device);
    // L y = c, L unit lower: column j's entries below the diagonal.
    for (int j = 0; j < n - 1; ++j) {
      subtract_column(x, n, count, first_row_after(j, t, stride), n, stride, j, f, p, false, 1.0f);
      threadgroup_barrier(mem_flags::mem_device);
    }
    // U x = y: column j's entries above the diagonal.
    for (int j = n - 1; j > 0; --j) {
      subtract_column(x, n, count, int(t), j, stride, j, f, p, false, factor_entry(f, p, j, j));
      threadgroup_barrier(mem_flags::mem_device);
    }
    divide_by_diagonal(x, n, count, t, stride, f, p);
    return;
  }
  // U^T y = c, U^T lower: U's row j right of the diagonal.
  for (int j = 0; j < n - 1; ++j) {
    subtract_column(x, n, count, first_row_after(j, t, stride), n, stride, j, f, p, true,
                    factor_entry(f, p, j, j));
    threadgroup_barrier(mem_flags::mem_device);
  }
  divide_by_diagonal(x, n, count, t, stride, f, p);
  threadgroup_barrier(mem_flags::mem_device);
  // L^T w = y, L^T unit upper: L's row j left of the diagonal.
  for (int j = n - 1; j > 0; --j) {
    subtract_column(x, n, count, int(t), j, stride, j, f, p, true, 1.0f);
    threadgroup_barrier(mem_flags::mem_device);
  }
  if (int(t) < count) {
    interchange_rows(x + long(t) * n, interchanges, n, /*reverse=*/true);
  }
}

MPS_OPS_INSTANTIATE_FOR_TYPE(lu_solve, dense, float)
