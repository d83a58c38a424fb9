// _linalg_eigh (torch.linalg.eigh, eigvalsh) of real symmetric matrices:
// the cyclic Jacobi method, one threadgroup per matrix.
//
//  1. The matrix is made whole from its UPLO triangle (a NaN or an infinity
//     there is reported, as the CPU's LAPACK fails on it) and scaled by a power
//     of two so its largest entry is in [0.5, 1) (exact; the eigenvalues are
//     scaled back at the end), so no square below overflows.
//  2. Sweeps of plane rotations J^T A J, each zeroing one off-diagonal pair
//     A(p, q) (Golub and Van Loan's symmetric Schur step, the smaller
//     rotation angle). A sweep is m - 1 steps of m / 2 disjoint pairs, m the
//     size rounded up to even (the round-robin tournament schedule: index m-1
//     stays, the others turn), so a step's rotations commute: every thread
//     updates its share of columns, then after a barrier of rows. A pair is
//     rotated only while |A(p, q)| exceeds float's epsilon times
//     sqrt(|A(p, p) A(q, q)|) (Demmel and Veselic's test, which keeps small
//     eigenvalues' relative accuracy); a sweep that rotates nothing ends it.
//  3. The diagonal holds the eigenvalues: each one's rank (ties by index)
//     puts it, and its column of the accumulated rotations, in ascending
//     order, as LAPACK's syevd returns them.
//
// Every decision (rotate or not, converged or not) is read from memory
// written before a barrier, so every branch around a barrier is uniform. The
// matrices live in device memory (the workspace), so no size limit comes
// from threadgroup memory.
#include <metal_stdlib>
#include <mps_ops/one_group_matrix.h>
#include <mps_ops/instantiate.h>

#include "eigh_params.h"
using namespace metal;

namespace {

constant constexpr float eigh_epsilon = 1.1920928955078125e-7f;
// Off-diagonal entries below float's smallest normal are left as they are:
// rotating them only churns subnormals.
constant constexpr float eigh_safe_min = 1.1754943508222875e-38f;

// The rotation zeroing A(p, q), written to `rotation` as (cos, sin, new
// A(p, p), new A(q, q)); cos 1 and sin 0 where none is needed. Returns
// whether it rotates.
inline bool plan_rotation(device float* a, int p, int q, int n, device float* rotation) {
  const float app = a[mps_ops::column_major(p, p, n)];
  const float aqq = a[mps_ops::column_major(q, q, n)];
  const float apq = a[mps_ops::column_major(p, q, n)];
  const float threshold = max(eigh_epsilon * sqrt(abs(app) * abs(aqq)), eigh_safe_min);
  if (!(abs(apq) > threshold)) {
    rotation[0] = 1.0f;
    rotation[1] = 0.0f;
    return false;
  }
  const float tau = (aqq - app) / (2.0f * apq);
  // sqrt(1 + tau^2) is |tau| to float precision past 2^12; far past it the
  // square would overflow.
  const float root = abs(tau) < 1.0e15f ? sqrt(1.0f + tau * tau) : abs(tau);
  const float tangent = (tau >= 0.0f ? 1.0f : -1.0f) / (abs(tau) + root);
  const float cosine = 1.0f / sqrt(1.0f + tangent * tangent);
  rotation[0] = cosine;
  rotation[1] = tangent * cosine;
  rotation[2] = app - tangent * apq;
  rotation[3] = aqq + tangent * apq;
  return true;
}

}  // namespace

template <typename T>
kernel void eigh(device T* workspace [[buffer(0)]],
                 device T* rotations [[buffer(1)]],
                 device T* pairs [[buffer(2)]],
                 device T* eigenvalues [[buffer(3)]],
                 device T* eigenvectors [[buffer(4)]],
                 device int* info [[buffer(5)]],
                 constant mps_ops::eigh_params& p [[buffer(6)]],
                 uint matrix [[threadgroup_position_in_grid]],
                 uint t [[thread_index_in_threadgroup]],
                 uint threads [[threads_per_threadgroup]]) {
  threadgroup float scratch[mps_ops::eigh_max_threads];
  const int n = p.n;
  const int m = n + (n & 1);  // an odd size plays a dummy index n, never rotated
  const int pair_count = m / 2;
  const bool vectors = p.want_vectors != 0;
  const long square = long(n) * long(n);
  device float* a = workspace + long(matrix) * square;
  device float* v = rotations + (vectors ? long(matrix) * square : 0);
  device float* plan = pairs + long(matrix) * pair_count * mps_ops::eigh_pair_floats;
  device float* values = eigenvalues + long(matrix) * n;
  device float* x = eigenvectors + (vectors ? long(matrix) * square : 0);

  // 1. The whole matrix from its triangle, its largest magnitude, and
  // whether it holds a NaN or an infinity.
  float largest = 0.0f;
  float nonfinite = 0.0f;
  for (long e = t; e < square; e += threads) {
    const int i = int(e % n);
    const int j = int(e / n);
    const bool kept = p.lower != 0 ? i >= j : i <= j;
    if (kept) {
      const float value = a[e];
      if (i != j) {
        a[mps_ops::column_major(j, i, n)] = value;
      }
      largest = max(largest, abs(value));
      nonfinite += isfinite(value) ? 0.0f : 1.0f;
    }
    if (vectors) {
      v[e] = i == j ? 1.0f : 0.0f;
    }
  }
  largest = mps_ops::group_largest(largest, scratch, t, threads);
  nonfinite = mps_ops::group_total(nonfinite, scratch, t, threads);
  if (nonfinite > 0.0f) {
    // No rotation means anything for it: reported as not converged, as the
    // CPU's LAPACK reports a NaN, the error code the count of non-finite
    // entries (LAPACK's own counts its off-diagonals left).
    if (t == 0) {
      info[matrix] = int(nonfinite);
    }
    return;
  }
  const int exponent = mps_ops::unit_exponent(largest);
  threadgroup_barrier(mem_flags::mem_device);  // the mirrored triangle
  mps_ops::scale_by_power_of_two(a, square, -exponent, t, threads);

  // 2. Sweeps.
  int sweeps = 0;
  float rotated = 1.0f;
  while (rotated > 0.0f && sweeps < p.sweep_limit) {
    float mine = 0.0f;
    for (int step = 0; step < m - 1; ++step) {
      for (int k = int(t); k < pair_count; k += int(threads)) {
        const int2 pq = mps_ops::round_robin_pair(step, k, m);
        device float* rotation = plan + long(k) * mps_ops::eigh_pair_floats;
        if (max(pq.x, pq.y) >= n) {
          rotation[0] = 1.0f;
          rotation[1] = 0.0f;
        } else if (plan_rotation(a, min(pq.x, pq.y), max(pq.x, pq.y), n, rotation)) {
          mine += 1.0f;
        }
      }
      threadgroup_barrier(mem_flags::mem_device);
      // Columns: A J and V J, one row of one pair's two columns a thread.
      for (long e = t; e < long(n) * pair_count; e += threads) {
        const int k = int(e / n);
        const int i = int(e % n);
        device const float* rotation = plan + long(k) * mps_ops::eigh_pair_floats;
        const float s = rotation[1];
        if (s == 0.0f) {
          continue;
        }
        const float c = rotation[0];
        const int2 pq = mps_ops::round_robin_pair(step, k, m);
        const int lo = min(pq.x, pq.y);
        const int hi = max(pq.x, pq.y);
        const float ap = a[mps_ops::column_major(i, lo, n)];
        const float aq = a[mps_ops::column_major(i, hi, n)];
        a[mps_ops::column_major(i, lo, n)] = c * ap - s * aq;
        a[mps_ops::column_major(i, hi, n)] = s * ap + c * aq;
        if (vectors) {
          const float vp = v[mps_ops::column_major(i, lo, n)];
          const float vq = v[mps_ops::column_major(i, hi, n)];
          v[mps_ops::column_major(i, lo, n)] = c * vp - s * vq;
          v[mps_ops::column_major(i, hi, n)] = s * vp + c * vq;
        }
      }
      threadgroup_barrier(mem_flags::mem_device);
      // Rows: J^T (A J); the pair's own 2 x 2 block takes the planned
      // diagonal and exact zeros.
      for (long e = t; e < long(n) * pair_count; e += threads) {
        const int k = int(e / n);
        const int j = int(e % n);
        device const float* rotation = plan + long(k) * mps_ops::eigh_pair_floats;
        const float s = rotation[1];
        if (s == 0.0f) {
          continue;
        }
        const float c = rotation[0];
        const int2 pq = mps_ops::round_robin_pair(step, k, m);
        const int lo = min(pq.x, pq.y);
        const int hi = max(pq.x, pq.y);
        if (j == lo || j == hi) {
          a[mps_ops::column_major(lo, j, n)] = j == lo ? rotation[2] : 0.0f;
          a[mps_ops::column_major(hi, j, n)] = j == hi ? rotation[3] : 0.0f;
          continue;
        }
        const float bp = a[mps_ops::column_major(lo, j, n)];
        const float bq = a[mps_ops::column_major(hi, j, n)];
        a[mps_ops::column_major(lo, j, n)] = c * bp - s * bq;
        a[mps_ops::column_major(hi, j, n)] = s * bp + c * bq;
      }
      threadgroup_barrier(mem_flags::mem_device);
    }
    rotated = mps_ops::group_total(mine, scratch, t, threads);
    ++sweeps;
  }
  if (rotated > 0.0f) {
    // Still rotating after the sweep limit: the pairs rotated in the last
    // sweep are the error code.
    if (t == 0) {
      info[matrix] = int(rotated);
    }
    return;
  }

  // 3. Ascending order: each eigenvalue's rank (ties by index) into `pairs`.
  device int* rank_of = reinterpret_cast<device int*>(plan);
  for (int i = int(t); i < n; i += int(threads)) {
    const float d = a[mps_ops::column_major(i, i, n)];
    int rank = 0;
    for (int j = 0; j < n; ++j) {
      const float other = a[mps_ops::column_major(j, j, n)];
      rank += (other < d || (other == d && j < i)) ? 1 : 0;
    }
    rank_of[i] = rank;
    values[rank] = ldexp(d, exponent);
  }
  threadgroup_barrier(mem_flags::mem_device);
  for (long e = t; vectors && e < square; e += threads) {
    const int column = int(e / n);
    x[long(rank_of[column]) * n + (e % n)] = v[e];
  }
  if (t == 0) {
    info[matrix] = 0;
  }
}

MPS_OPS_INSTANTIATE_FOR_TYPE(eigh, dense, float)
