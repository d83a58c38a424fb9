// _linalg_svd (torch.linalg.svd, svdvals, torch.svd and what builds on them:
// pinv, matrix_rank, the nuclear and spectral norms) of real matrices:
// one-sided Jacobi (Hestenes), one threadgroup per matrix.
//
// The host hands the tall problem B (rows >= columns): A, or A^T where A is
// wide, column-major. Then:
//  1. A NaN or an infinity is reported (the CPU's LAPACK fails on it); B is
//     scaled by a power of two so its largest entry is in [0.5, 1) (exact;
//     the singular values are scaled back), so no sum of squares overflows.
//  2. Sweeps of plane rotations B J (and V J) over pairs of columns, each
//     making its two columns orthogonal: the Jacobi rotation of their Gram
//     matrix [[|b_p|^2, b_p.b_q], [b_p.b_q, |b_q|^2]]. A sweep is m - 1 steps
//     of m / 2 disjoint pairs (round-robin, as eigh.metal's), so a step's
//     rotations commute: a barrier after the plans, one after the updates.
//     A pair rotates while |b_p.b_q| > sqrt(rows) eps |b_p| |b_q| (the
//     vectors' relative orthogonality, to the rounding of the dot product);
//     a sweep that rotates nothing ends it.
//  3. The singular values are the columns' norms, placed in descending order
//     by rank (ties by index); the left vectors the normalised columns, the
//     right vectors V's columns, in the same order.
//  4. Left vectors a zero column leaves undefined, and full_matrices' extra
//     ones, complete the orthonormal basis by Gram-Schmidt on unit vectors:
//     each time e_i of the row with the least weight sum_k u_k(i)^2 in the
//     vectors so far (its residual norm at least 1/sqrt(rows), so one pass
//     leaves it orthogonal to rounding).
//
// Every decision is read from memory written before a barrier, so every
// branch around a barrier is uniform. The matrices live in device memory.
#include <metal_stdlib>
#include <mps_ops/one_group_matrix.h>
#include <mps_ops/instantiate.h>

#include "svd_params.h"
using namespace metal;

namespace {

constant constexpr float svd_epsilon = 1.1920928955078125e-7f;
constant constexpr float svd_safe_min = 1.1754943508222875e-38f;

// The least value and (ties) the lowest index holding it: the index, as
// every thread sees it.
inline int group_argmin(float mine, int index, threadgroup float* values, threadgroup int* indices, uint t,
                        uint threads) {
  values[t] = mine;
  indices[t] = index;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint half_threads = threads / 2; half_threads > 0; half_threads /= 2) {
    if (t < half_threads) {
      const float other = values[t + half_threads];
      const int other_index = indices[t + half_threads];
      if (other < values[t] || (other == values[t] && other_index < indices[t])) {
        values[t] = other;
        indices[t] = other_index;
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  const int least = indices[0];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return least;
}

// The rotation orthogonalising columns p and q, written to `rotation` as
// (cos, sin); sin 0 where none is needed. Returns whether it rotates.
inline bool plan_column_rotation(device const float* b, int p, int q, int rows, device float* rotation) {
  float alpha = 0.0f;
  float beta = 0.0f;
  float gamma = 0.0f;
  for (int i = 0; i < rows; ++i) {
    const float bp = b[mps_ops::column_major(i, p, rows)];
    const float bq = b[mps_ops::column_major(i, q, rows)];
    alpha += bp * bp;
    beta += bq * bq;
    gamma += bp * bq;
  }
  // sqrt(rows) eps: the rounding of a dot product of `rows` terms (LAPACK's
  // gesvj takes the same tolerance), below which gamma is noise.
  const float threshold = max(sqrt(float(rows)) * svd_epsilon * sqrt(alpha) * sqrt(beta), svd_safe_min);
  if (!(abs(gamma) > threshold)) {
    rotation[0] = 1.0f;
    rotation[1] = 0.0f;
    return false;
  }
  const float zeta = (beta - alpha) / (2.0f * gamma);
  const float root = abs(zeta) < 1.0e15f ? sqrt(1.0f + zeta * zeta) : abs(zeta);
  const float tangent = (zeta >= 0.0f ? 1.0f : -1.0f) / (abs(zeta) + root);
  const float cosine = 1.0f / sqrt(1.0f + tangent * tangent);
  rotation[0] = cosine;
  rotation[1] = tangent * cosine;
  return true;
}

}  // namespace

template <typename T>
kernel void svd(device T* workspace [[buffer(0)]],
                device T* rotations [[buffer(1)]],
                device T* scratch_pairs [[buffer(2)]],
                device T* scratch_rows [[buffer(3)]],
                device T* singular_values [[buffer(4)]],
                device T* left_vectors [[buffer(5)]],
                device T* right_vectors [[buffer(6)]],
                device int* info [[buffer(7)]],
                constant mps_ops::svd_params& p [[buffer(8)]],
                uint matrix [[threadgroup_position_in_grid]],
                uint t [[thread_index_in_threadgroup]],
                uint threads [[threads_per_threadgroup]]) {
  threadgroup float scratch[mps_ops::svd_max_threads];
  threadgroup int scratch_indices[mps_ops::svd_max_threads];
  const int rows = p.rows;
  const int columns = p.columns;
  const int m = columns + (columns & 1);  // an odd count plays a dummy column, never rotated
  const int pair_count = m / 2;
  const bool vectors = p.want_vectors != 0;
  const long size = long(rows) * columns;
  device float* b = workspace + long(matrix) * size;
  device float* v = rotations + (vectors ? long(matrix) * columns * columns : 0);
  device float* plan = scratch_pairs + long(matrix) * pair_count * mps_ops::svd_pair_floats;
  device float* row_scratch = scratch_rows + long(matrix) * rows;
  device float* values = singular_values + long(matrix) * columns;
  device float* left = left_vectors + (vectors ? long(matrix) * rows * p.left_columns : 0);
  device float* right = right_vectors + (vectors ? long(matrix) * columns * columns : 0);

  // 1. Non-finite entries, the largest magnitude, V = I.
  float largest = 0.0f;
  float nonfinite = 0.0f;
  for (long e = t; e < size; e += threads) {
    largest = max(largest, abs(b[e]));
    nonfinite += isfinite(b[e]) ? 0.0f : 1.0f;
  }
  for (long e = t; vectors && e < long(columns) * columns; e += threads) {
    v[e] = e % (columns + 1) == 0 ? 1.0f : 0.0f;
  }
  largest = mps_ops::group_largest(largest, scratch, t, threads);
  nonfinite = mps_ops::group_total(nonfinite, scratch, t, threads);
  if (nonfinite > 0.0f) {
    if (t == 0) {
      info[matrix] = -2;  // the CPU's "contained non-finite values"
    }
    return;
  }
  const int exponent = mps_ops::unit_exponent(largest);
  mps_ops::scale_by_power_of_two(b, size, -exponent, t, threads);

  // 2. Sweeps.
  int sweeps = 0;
  float rotated = 1.0f;
  while (rotated > 0.0f && sweeps < p.sweep_limit) {
    float mine = 0.0f;
    for (int step = 0; step < m - 1; ++step) {
      for (int k = int(t); k < pair_count; k += int(threads)) {
        const int2 pq = mps_ops::round_robin_pair(step, k, m);
        device float* rotation = plan + long(k) * mps_ops::svd_pair_floats;
        if (max(pq.x, pq.y) >= columns) {
          rotation[0] = 1.0f;
          rotation[1] = 0.0f;
        } else if (plan_column_rotation(b, min(pq.x, pq.y), max(pq.x, pq.y), rows, rotation)) {
          mine += 1.0f;
        }
      }
      threadgroup_barrier(mem_flags::mem_device);
      // B J, then V J: one row of one pair's two columns a thread.
      const long b_items = long(rows) * pair_count;
      const long items = b_items + (vectors ? long(columns) * pair_count : 0);
      for (long e = t; e < items; e += threads) {
        const bool in_b = e < b_items;
        const long local = in_b ? e : e - b_items;
        const int height = in_b ? rows : columns;
        const int k = int(local / height);
        const int i = int(local % height);
        device const float* rotation = plan + long(k) * mps_ops::svd_pair_floats;
        const float s = rotation[1];
        if (s == 0.0f) {
          continue;
        }
        const float c = rotation[0];
        const int2 pq = mps_ops::round_robin_pair(step, k, m);
        device float* target = in_b ? b : v;
        const long lo = mps_ops::column_major(i, min(pq.x, pq.y), height);
        const long hi = mps_ops::column_major(i, max(pq.x, pq.y), height);
        const float xp = target[lo];
        const float xq = target[hi];
        target[lo] = c * xp - s * xq;
        target[hi] = s * xp + c * xq;
      }
      threadgroup_barrier(mem_flags::mem_device);
    }
    rotated = mps_ops::group_total(mine, scratch, t, threads);
    ++sweeps;
  }
  if (rotated > 0.0f) {
    if (t == 0) {
      info[matrix] = int(rotated);  // pairs still rotating in the last sweep
    }
    return;
  }

  // 3. Norms (into the row scratch: rows >= columns), ranks (into the plan),
  // values and vectors in descending order.
  for (int j = int(t); j < columns; j += int(threads)) {
    float sum = 0.0f;
    for (int i = 0; i < rows; ++i) {
      const float x = b[mps_ops::column_major(i, j, rows)];
      sum += x * x;
    }
    row_scratch[j] = sqrt(sum);
  }
  threadgroup_barrier(mem_flags::mem_device);
  device int* rank_of = reinterpret_cast<device int*>(plan);
  for (int j = int(t); j < columns; j += int(threads)) {
    const float norm = row_scratch[j];
    int rank = 0;
    for (int k = 0; k < columns; ++k) {
      const float other = row_scratch[k];
      rank += (other > norm || (other == norm && k < j)) ? 1 : 0;
    }
    rank_of[j] = rank;
    values[rank] = ldexp(norm, exponent);
  }
  if (!vectors) {
    if (t == 0) {
      info[matrix] = 0;
    }
    return;
  }
  threadgroup_barrier(mem_flags::mem_device);
  for (long e = t; e < size; e += threads) {
    const int j = int(e / rows);
    const int i = int(e % rows);
    const float norm = row_scratch[j];
    left[mps_ops::column_major(i, rank_of[j], rows)] = norm > 0.0f ? b[e] / norm : 0.0f;
  }
  for (long e = t; e < long(columns) * columns; e += threads) {
    const int j = int(e / columns);
    const int i = int(e % columns);
    right[mps_ops::column_major(i, rank_of[j], columns)] = v[e];
  }
  int defined = 0;  // columns of nonzero norm: ranks 0 .. defined - 1
  for (int k = 0; k < columns; ++k) {
    defined += row_scratch[k] > 0.0f ? 1 : 0;
  }
  threadgroup_barrier(mem_flags::mem_device);

  // 4. Completion: each row's weight in the defined vectors, then one unit
  // vector at a time made orthogonal to them.
  if (defined < p.left_columns) {
    for (int i = int(t); i < rows; i += int(threads)) {
      float weight = 0.0f;
      for (int k = 0; k < defined; ++k) {
        const float u = left[mps_ops::column_major(i, k, rows)];
        weight += u * u;
      }
      row_scratch[i] = weight;
    }
    threadgroup_barrier(mem_flags::mem_device);
    for (int slot = defined; slot < p.left_columns; ++slot) {
      float least = numeric_limits<float>::infinity();
      int least_row = 0;
      for (int i = int(t); i < rows; i += int(threads)) {
        if (row_scratch[i] < least) {
          least = row_scratch[i];
          least_row = i;
        }
      }
      const int chosen = group_argmin(least, least_row, scratch, scratch_indices, t, threads);
      // w = e_chosen - sum_k u_k(chosen) u_k, into the slot's column.
      float norm_part = 0.0f;
      for (int i = int(t); i < rows; i += int(threads)) {
        float w = i == chosen ? 1.0f : 0.0f;
        for (int k = 0; k < slot; ++k) {
          w -= left[mps_ops::column_major(chosen, k, rows)] * left[mps_ops::column_major(i, k, rows)];
        }
        left[mps_ops::column_major(i, slot, rows)] = w;
        norm_part += w * w;
      }
      const float norm = sqrt(mps_ops::group_total(norm_part, scratch, t, threads));
      for (int i = int(t); i < rows; i += int(threads)) {
        const float u = left[mps_ops::column_major(i, slot, rows)] / norm;
        left[mps_ops::column_major(i, slot, rows)] = u;
        row_scratch[i] += u * u;
      }
      threadgroup_barrier(mem_flags::mem_device);
    }
  }
  if (t == 0) {
    info[matrix] = 0;
  }
}

MPS_OPS_INSTANTIATE_FOR_TYPE(svd, dense, float)
