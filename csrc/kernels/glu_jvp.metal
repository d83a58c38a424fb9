// Forward-mode derivatives of GLU (glu(x) = a * sigmoid(b), x = [a, b]
// halved along dim): glu_jvp gives d(glu) from dx, glu_backward_jvp gives
// d(grad_x) from dx, grad_x's first half and d(grad_glu). Up to K elements
// of a row of the half shape per thread; every operand is a view (a half of x, dx or
// grad_x, broadcast) read through its own strides, in float for half and
// bfloat. The CPU's expressions, term for term, so infinities and NaN come
// out as there: with s = sigmoid(b), n = db - db * s,
//   d glu       = da * s + glu * (db - s * db)
//   d grad_a    = dgrad_glu * s + grad_a * n
//   d grad_b    = d grad_a * (a - a * s) + grad_a * (da - da * s - a * s * n)
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include "glu_jvp_params.h"
using namespace metal;

namespace {

// Element offsets of the first N operands at the start of row `row` of the
// half shape (x = its innermost dim, y = the rest): 32-bit coordinates (the
// host allows no more than 2**32 - 1 elements; a GPU divides 64-bit integers
// in software), the outermost one what is left of the row, so a 2-D shape
// divides nothing.
template <int N>
inline void row_offsets(uint row, constant mps_ops::glu_geometry& g, thread long* offsets) {
  for (int op = 0; op < N; ++op) {
    offsets[op] = 0;
  }
  for (int d = g.ndim - 2; d >= 0; --d) {
    const uint size = uint(g.sizes[d]);
    const uint coord = d > 0 ? row % size : row;
    row /= size;
    for (int op = 0; op < N; ++op) {
      offsets[op] += long(coord) * g.strides[op][d];
    }
  }
}

inline float sigmoid(float v) {
  return 1.0f / (1.0f + exp(-v));
}

}  // namespace

// Each thread takes up to K elements of a row (glu_elements_per_thread), all
// loaded before any is computed, the row's threads stepping by their count
// (the strided element-wise kernels' grid, elementwise.h).
// Operands: out, glu, b, da, db.
template <typename T>
kernel void glu_jvp(
    device T* out [[buffer(0)]],
    constant T* glu [[buffer(1)]],
    constant T* b [[buffer(2)]],
    constant T* da [[buffer(3)]],
    constant T* db [[buffer(4)]],
    constant mps_ops::glu_geometry& g [[buffer(5)]],
    uint2 pos [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  constexpr uint K = mps_ops::glu_elements_per_thread;
  long o[5];
  row_offsets<5>(pos.y, g, o);
  const int last = g.ndim - 1;
  const uint inner = uint(g.sizes[last]);
  float gluv[K], bv[K], dav[K], dbv[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint x = pos.x + k * grid.x;
    if (x < inner) {
      gluv[k] = float(glu[o[1] + long(x) * g.strides[1][last]]);
      bv[k] = float(b[o[2] + long(x) * g.strides[2][last]]);
      dav[k] = float(da[o[3] + long(x) * g.strides[3][last]]);
      dbv[k] = float(db[o[4] + long(x) * g.strides[4][last]]);
    }
  }
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint x = pos.x + k * grid.x;
    if (x < inner) {
      const float s = sigmoid(bv[k]);
      out[o[0] + long(x) * g.strides[0][last]] = static_cast<T>(dav[k] * s + gluv[k] * (dbv[k] - s * dbv[k]));
    }
  }
}

// Operands: out_a, out_b, grad_a (grad_x's first half), a, b, dgrad_glu, da, db.
template <typename T>
kernel void glu_backward_jvp(
    device T* out_a [[buffer(0)]],
    device T* out_b [[buffer(1)]],
    constant T* grad_a [[buffer(2)]],
    constant T* a [[buffer(3)]],
    constant T* b [[buffer(4)]],
    constant T* dgrad_glu [[buffer(5)]],
    constant T* da [[buffer(6)]],
    constant T* db [[buffer(7)]],
    constant mps_ops::glu_geometry& g [[buffer(8)]],
    uint2 pos [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  constexpr uint K = mps_ops::glu_elements_per_thread;
  long o[8];
  row_offsets<8>(pos.y, g, o);
  const int last = g.ndim - 1;
  const uint inner = uint(g.sizes[last]);
  float gav[K], av[K], bv[K], dgv[K], dav[K], dbv[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint x = pos.x + k * grid.x;
    if (x < inner) {
      gav[k] = float(grad_a[o[2] + long(x) * g.strides[2][last]]);
      av[k] = float(a[o[3] + long(x) * g.strides[3][last]]);
      bv[k] = float(b[o[4] + long(x) * g.strides[4][last]]);
      dgv[k] = float(dgrad_glu[o[5] + long(x) * g.strides[5][last]]);
      dav[k] = float(da[o[6] + long(x) * g.strides[6][last]]);
      dbv[k] = float(db[o[7] + long(x) * g.strides[7][last]]);
    }
  }
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint x = pos.x + k * grid.x;
    if (x < inner) {
      const float s = sigmoid(bv[k]);
      const float ga = gav[k], glu = av[k] * s;
      const float n = dbv[k] - dbv[k] * s;
      const float dgrad_a = dgv[k] * s + ga * n;
      out_a[o[0] + long(x) * g.strides[0][last]] = static_cast<T>(dgrad_a);
      out_b[o[1] + long(x) * g.strides[1][last]] =
          static_cast<T>(dgrad_a * (av[k] - glu) + ga * (dav[k] - dav[k] * s - glu * n));
    }
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, glu_jvp, strided)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, glu_backward_jvp, strided)
