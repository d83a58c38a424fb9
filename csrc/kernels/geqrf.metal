// geqrf (and linalg_qr, whose stub forms Q from these reflectors with
// ormqr.metal): the QR factorisation by Householder reflectors, LAPACK's
// unblocked geqr2, one threadgroup per matrix.
//
// Column j's reflector (larfg, include/mps_ops/householder.h: R's diagonal
// entry -sign(a_jj) |x|, as LAPACK's) needs the norm of the column below the
// diagonal: a tree reduction over the group. Then each thread takes trailing
// columns and applies the reflector to them (w = tau (v . c), c -= w v), so
// the results are LAPACK's up to rounding, signs included. The matrix is
// first scaled by a power of two so its largest entry is in [0.5, 1)
// (exact; R is scaled back, the reflectors do not change), so no square
// overflows.
//
// Every decision is read from memory written before a barrier, so every
// branch around a barrier is uniform. The matrix lives in device memory.
#include <metal_stdlib>
#include <mps_ops/one_group_matrix.h>
#include <mps_ops/householder.h>
#include <mps_ops/instantiate.h>

#include "geqrf_params.h"
using namespace metal;

template <typename T>
kernel void geqrf(device T* workspace [[buffer(0)]],
                  device T* tau [[buffer(1)]],
                  constant mps_ops::geqrf_params& p [[buffer(2)]],
                  uint matrix [[threadgroup_position_in_grid]],
                  uint t [[thread_index_in_threadgroup]],
                  uint threads [[threads_per_threadgroup]]) {
  threadgroup float scratch[mps_ops::geqrf_max_threads];
  const int rows = p.rows;
  const int columns = p.columns;
  const int reflectors = min(rows, columns);
  const long size = long(rows) * columns;
  device float* a = workspace + long(matrix) * size;
  device float* taus = tau + long(matrix) * reflectors;

  float largest = 0.0f;
  for (long e = t; e < size; e += threads) {
    largest = max(largest, abs(a[e]));
  }
  largest = mps_ops::group_largest(largest, scratch, t, threads);
  // A NaN or an infinity: left unscaled, to spread as the CPU's LAPACK
  // spreads it.
  const int exponent = mps_ops::unit_exponent(largest);
  mps_ops::scale_by_power_of_two(a, size, -exponent, t, threads);

  for (int j = 0; j < reflectors; ++j) {
    float squares = 0.0f;
    for (int i = j + 1 + int(t); i < rows; i += int(threads)) {
      const float x = a[mps_ops::column_major(i, j, rows)];
      squares += x * x;
    }
    squares = mps_ops::group_total(squares, scratch, t, threads);
    const float alpha = a[mps_ops::column_major(j, j, rows)];
    const mps_ops::reflector r = mps_ops::reflector_from_norm(alpha, sqrt(squares));
    threadgroup_barrier(mem_flags::mem_device);  // every thread has read alpha
    if (t == 0) {
      taus[j] = r.tau;
      a[mps_ops::column_major(j, j, rows)] = r.beta;
    }
    if (r.tau != 0.0f) {
      for (int i = j + 1 + int(t); i < rows; i += int(threads)) {
        a[mps_ops::column_major(i, j, rows)] *= r.inverse;
      }
    }
    threadgroup_barrier(mem_flags::mem_device);
    if (r.tau != 0.0f) {
      for (int c = j + 1 + int(t); c < columns; c += int(threads)) {
        float w = a[mps_ops::column_major(j, c, rows)];
        for (int i = j + 1; i < rows; ++i) {
          w += a[mps_ops::column_major(i, j, rows)] * a[mps_ops::column_major(i, c, rows)];
        }
        w *= r.tau;
        a[mps_ops::column_major(j, c, rows)] -= w;
        for (int i = j + 1; i < rows; ++i) {
          a[mps_ops::column_major(i, c, rows)] -= w * a[mps_ops::column_major(i, j, rows)];
        }
      }
    }
    threadgroup_barrier(mem_flags::mem_device);
  }
  // R back to A's scale (on and above the diagonal).
  for (long e = t; e < size; e += threads) {
    const int i = int(e % rows);
    const int j = int(e / rows);
    if (i <= j) {
      a[e] = ldexp(a[e], exponent);
    }
  }
}

MPS_OPS_INSTANTIATE_FOR_TYPE(geqrf, dense, float)
