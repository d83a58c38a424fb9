// linalg_ldl_factor_ex and linalg_ldl_solve: the Bunch-Kaufman factorization
// A = P L D L^T P^T of symmetric matrices (lower triangle), with LAPACK's
// sytf2 pivot rule and storage, and the solve with it (sytrs).
//
// The factorization walks the columns in order, so one threadgroup takes one
// matrix (column-major in LD, already a copy of A) and its threads share
// each step: the column's largest entry and, where needed, the pivot row's
// (tree reductions in threadgroup memory), the row/column interchange, then
// the rank-1 or rank-2 update of the trailing lower triangle, one column
// after another with the threads along its rows (neighbouring threads,
// neighbouring elements). Every thread reads the step's decisions from the
// same memory after the same barriers, so every branch is uniform. The
// arithmetic is LAPACK's, in its order (syr's -d11 * x_j scaling, the 2x2
// update's wk and wkp1), so pivots are the CPU's wherever the choice is not
// a near tie.
//
// The solve takes one thread per right-hand side: pivots interchange its
// rows, L and D are applied forward, L^T backward.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>

#include "ldl_params.h"
using namespace metal;

namespace {

// (1 + sqrt(17)) / 8: Bunch and Kaufman's bound on element growth.
constant constexpr float bunch_kaufman_alpha = 0.6403882032022076f;

// A candidate pivot: |value| and its row. The larger value wins, the lower
// row on ties (LAPACK's isamax returns the first maximum); NaN never wins.
struct candidate {
  float value;
  int index;
};

inline candidate better(candidate a, candidate b) {
  return (b.value > a.value || (b.value == a.value && b.index < a.index)) ? b : a;
}

// The best of the group's candidates, on every thread. `threads` is a power
// of two no larger than the scratch arrays.
inline candidate group_best(candidate mine, threadgroup float* values, threadgroup int* indices, uint t,
                            uint threads) {
  values[t] = mine.value;
  indices[t] = mine.index;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint half_threads = threads / 2; half_threads > 0; half_threads /= 2) {
    if (t < half_threads) {
      candidate here;
      here.value = values[t];
      here.index = indices[t];
      candidate there;
      there.value = values[t + half_threads];
      there.index = indices[t + half_threads];
      const candidate best = better(here, there);
      values[t] = best.value;
      indices[t] = best.index;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  candidate result;
  result.value = values[0];
  result.index = indices[0];
  threadgroup_barrier(mem_flags::mem_threadgroup);  // the scratch is reused next
  return result;
}

template <typename T>
inline void swap_at(device T* a, long i, long j) {
  const T held = a[i];
  a[i] = a[j];
  a[j] = held;
}

}  // namespace

template <typename T>
kernel void ldl_factor(device T* ld [[buffer(0)]],
                       device int* pivots [[buffer(1)]],
                       device int* info [[buffer(2)]],
                       constant mps_ops::ldl_factor_params& p [[buffer(3)]],
                       uint matrix [[threadgroup_position_in_grid]],
                       uint t [[thread_index_in_threadgroup]],
                       uint threads [[threads_per_threadgroup]]) {
  threadgroup float values[mps_ops::ldl_factor_max_threads];
  threadgroup int indices[mps_ops::ldl_factor_max_threads];
  const int n = p.n;
  device T* a = ld + long(matrix) * long(n) * long(n);  // A(i, j) is a[j * n + i]
  device int* ipiv = pivots + long(matrix) * n;
  // The strict upper triangle is never read: zero it, as the CPU returns it.
  for (int j = 1; j < n; ++j) {
    for (int i = int(t); i < j; i += int(threads)) {
      a[j * n + i] = T(0);
    }
  }
  int first_zero_pivot = 0;
  int k = 0;
  while (k < n) {
    int kstep = 1;
    int kp = k;
    const float absakk = fabs(float(a[k * n + k]));
    candidate mine;
    mine.value = -1.0f;
    mine.index = n;
    for (int i = k + 1 + int(t); i < n; i += int(threads)) {
      candidate here;
      here.value = fabs(float(a[k * n + i]));
      here.index = i;
      mine = better(mine, here);
    }
    const candidate column = group_best(mine, values, indices, t, threads);
    // No candidate below the diagonal: the last column (colmax 0), or one of
    // NaNs only (the first of them, as isamax's NaN start gives).
    const int imax = column.index < n ? column.index : min(k + 1, n - 1);
    const float colmax = column.index < n ? column.value : (k + 1 < n ? fabs(float(a[k * n + k + 1])) : 0.0f);
    if ((absakk == 0.0f && colmax == 0.0f) || isnan(absakk)) {
      // A zero column: D(k) is zero, nothing to eliminate.
      if (first_zero_pivot == 0) {
        first_zero_pivot = k + 1;
      }
    } else {
      if (absakk < bunch_kaufman_alpha * colmax) {
        // Read before the reduction's barriers: after them thread 0 may
        // already be interchanging the diagonal (a race the emulator caught
        // as threads taking different branches).
        const float absaii = fabs(float(a[imax * n + imax]));
        // The pivot row's largest off-diagonal entry: row imax left of the
        // diagonal, column imax below it.
        candidate row;
        row.value = 0.0f;
        row.index = 0;
        for (int j = k + int(t); j < imax; j += int(threads)) {
          row.value = max(row.value, fabs(float(a[j * n + imax])));
        }
        for (int j = imax + 1 + int(t); j < n; j += int(threads)) {
          row.value = max(row.value, fabs(float(a[imax * n + j])));
        }
        const float rowmax = group_best(row, values, indices, t, threads).value;
        if (absakk >= bunch_kaufman_alpha * colmax * (colmax / rowmax)) {
          kp = k;
        } else if (absaii >= bunch_kaufman_alpha * rowmax) {
          kp = imax;
        } else {
          kp = imax;
          kstep = 2;
        }
      }
      const int kk = k + kstep - 1;
      if (kp != kk) {
        // Interchange rows and columns kk and kp of the trailing lower
        // triangle (the sets below are disjoint).
        for (int j = kp + 1 + int(t); j < n; j += int(threads)) {
          swap_at(a, kk * n + j, kp * n + j);
        }
        for (int j = kk + 1 + int(t); j < kp; j += int(threads)) {
          swap_at(a, kk * n + j, j * n + kp);
        }
        if (t == 0) {
          swap_at(a, kk * n + kk, kp * n + kp);
          if (kstep == 2) {
            swap_at(a, k * n + k + 1, k * n + kp);
          }
        }
        threadgroup_barrier(mem_flags::mem_device);
      }
      if (kstep == 1 && k < n - 1) {
        // A := A - x x^T / d11 on the trailing triangle (syr, alpha -1/d11,
        // skipping zero x_j), then L's column: x / d11.
        const float d11 = 1.0f / float(a[k * n + k]);
        for (int j = k + 1; j < n; ++j) {
          const float xj = float(a[k * n + j]);
          if (xj != 0.0f) {
            const float scale = -d11 * xj;
            for (int i = j + int(t); i < n; i += int(threads)) {
              a[j * n + i] = T(float(a[j * n + i]) + float(a[k * n + i]) * scale);
            }
          }
        }
        threadgroup_barrier(mem_flags::mem_device);
        for (int i = k + 1 + int(t); i < n; i += int(threads)) {
          a[k * n + i] = T(float(a[k * n + i]) * d11);
        }
      } else if (kstep == 2 && k < n - 2) {
        // The 2x2 pivot's update: columns k and k + 1 of L are (wk, wkp1),
        // D's inverse applied to the old columns; each trailing column j
        // loses A(:, k) wk_j + A(:, k + 1) wkp1_j. The old columns stay in
        // place until every trailing column is done.
        float d21 = float(a[k * n + k + 1]);
        const float d11 = float(a[(k + 1) * n + k + 1]) / d21;
        const float d22 = float(a[k * n + k]) / d21;
        const float inverse = 1.0f / (d11 * d22 - 1.0f);
        d21 = inverse / d21;
        for (int j = k + 2; j < n; ++j) {
          const float ajk = float(a[k * n + j]);
          const float ajk1 = float(a[(k + 1) * n + j]);
          const float wk = d21 * (d11 * ajk - ajk1);
          const float wkp1 = d21 * (d22 * ajk1 - ajk);
          for (int i = j + int(t); i < n; i += int(threads)) {
            a[j * n + i] = T(float(a[j * n + i]) - float(a[k * n + i]) * wk - float(a[(k + 1) * n + i]) * wkp1);
          }
        }
        threadgroup_barrier(mem_flags::mem_device);
        for (int j = k + 2 + int(t); j < n; j += int(threads)) {
          const float ajk = float(a[k * n + j]);
          const float ajk1 = float(a[(k + 1) * n + j]);
          a[k * n + j] = T(d21 * (d11 * ajk - ajk1));
          a[(k + 1) * n + j] = T(d21 * (d22 * ajk1 - ajk));
        }
      }
    }
    // LAPACK's 1-based pivots: kp + 1 for a 1x1 block, -(kp + 1) twice for
    // a 2x2 one.
    if (t == 0) {
      ipiv[k] = kstep == 1 ? kp + 1 : -(kp + 1);
      if (kstep == 2) {
        ipiv[k + 1] = -(kp + 1);
      }
    }
    threadgroup_barrier(mem_flags::mem_device);
    k += kstep;
  }
  if (t == 0) {
    info[matrix] = first_zero_pivot;
  }
}

MPS_OPS_INSTANTIATE_FOR_TYPE(ldl_factor, dense, float)

// The CPU checks every pivot's magnitude before it solves anything (its
// abs wraps, so int64's minimum fails the ">= 1" check, as here); it does
// not check that a 2x2 block's two pivots pair up, and then reads and writes
// outside the matrix. Ours raises for that too (a third flag), so the solve
// below only ever sees a factorization's pivot structure.
template <typename T>
kernel void ldl_solve(device T* b [[buffer(0)]],
                      device int* pivot_too_large [[buffer(1)]],
                      device int* pivot_too_small [[buffer(2)]],
                      device int* pivots_unpaired [[buffer(3)]],
                      constant T* ld [[buffer(4)]],
                      constant long* pivots [[buffer(5)]],
                      constant mps_ops::ldl_solve_params& p [[buffer(6)]],
                      uint2 position [[thread_position_in_grid]]) {
  const int n = p.n;
  device T* x = b + (long(position.y) * p.columns + long(position.x)) * n;  // column-major
  constant T* a = ld + long(position.y) * p.ld_batch_stride;
  constant long* ipiv = pivots + long(position.y) * p.pivots_batch_stride;
  // A(i, j) is a[i * p.ld_row_stride + j * p.ld_column_stride].
  bool valid = true;
  for (int k = 0; k < n; ++k) {
    const long pivot = ipiv[k * p.pivots_stride];
    const long magnitude = pivot < 0 ? long(0ul - ulong(pivot)) : pivot;
    if (magnitude > n) {
      *pivot_too_large = 1;
      valid = false;
    } else if (magnitude < 1) {
      *pivot_too_small = 1;
      valid = false;
    }
  }
  if (!valid) {
    return;
  }
  for (int k = 0; k < n; ++k) {
    const long pivot = ipiv[k * p.pivots_stride];
    if (pivot < 0) {
      if (k + 1 >= n || ipiv[(k + 1) * p.pivots_stride] != pivot) {
        *pivots_unpaired = 1;
        return;
      }
      ++k;
    }
  }
  // L D y = P^T b, forward (sytrs, lower).
  int k = 0;
  while (k < n) {
    const long pivot = ipiv[k * p.pivots_stride];
    if (pivot > 0) {
      const int kp = int(pivot) - 1;
      if (kp != k) {
        swap_at(x, k, kp);
      }
      const float scale = -float(x[k]);
      for (int i = k + 1; i < n; ++i) {
        x[i] = T(float(x[i]) + float(a[i * p.ld_row_stride + k * p.ld_column_stride]) * scale);
      }
      x[k] = T(float(x[k]) * (1.0f / float(a[k * p.ld_row_stride + k * p.ld_column_stride])));
      k += 1;
      continue;
    }
    const int kp = int(-pivot) - 1;
    if (kp != k + 1) {
      swap_at(x, k + 1, kp);
    }
    const float first = -float(x[k]);
    for (int i = k + 2; i < n; ++i) {
      x[i] = T(float(x[i]) + float(a[i * p.ld_row_stride + k * p.ld_column_stride]) * first);
    }
    const float second = -float(x[k + 1]);
    for (int i = k + 2; i < n; ++i) {
      x[i] = T(float(x[i]) + float(a[i * p.ld_row_stride + (k + 1) * p.ld_column_stride]) * second);
    }
    const float akm1k = float(a[(k + 1) * p.ld_row_stride + k * p.ld_column_stride]);
    const float akm1 = float(a[k * p.ld_row_stride + k * p.ld_column_stride]) / akm1k;
    const float ak = float(a[(k + 1) * p.ld_row_stride + (k + 1) * p.ld_column_stride]) / akm1k;
    const float denominator = akm1 * ak - 1.0f;
    const float bkm1 = float(x[k]) / akm1k;
    const float bk = float(x[k + 1]) / akm1k;
    x[k] = T((ak * bkm1 - bk) / denominator);
    x[k + 1] = T((akm1 * bk - bkm1) / denominator);
    k += 2;
  }
  // L^T P^T x = y, backward.
  k = n - 1;
  while (k >= 0) {
    const long pivot = ipiv[k * p.pivots_stride];
    const int first = pivot > 0 ? k : k - 1;  // the block's first column
    for (int column = k; column >= first; --column) {
      float dot = 0.0f;
      for (int i = k + 1; i < n; ++i) {
        dot += float(x[i]) * float(a[i * p.ld_row_stride + column * p.ld_column_stride]);
      }
      x[column] = T(float(x[column]) - dot);
    }
    const int kp = int(pivot > 0 ? pivot : -pivot) - 1;
    if (kp != k) {
      swap_at(x, k, kp);
    }
    k = first - 1;
  }
}

MPS_OPS_INSTANTIATE_FOR_TYPE(ldl_solve, dense, float)
