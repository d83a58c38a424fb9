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
#include <mps_ops/element_pairs.h>
#include <mps_ops/instantiate.h>
#include "glu_jvp_params.h"
using namespace metal;

namespace {

// Each operand's offset of the thread's row and its stride along the row,
// read from the geometry once per thread (read per element, the strides'
// loads came before each element's own load, which waited for them).
template <int N, typename I>
struct row_operands {
  I offset[N];
  I inner_stride[N];
  // Operand op's element x of the row: in I, 32-bit multiplies and adds
  // where the geometry is narrow (a 64-bit product per operand per element
  // made glu_jvp instruction-bound: H200, half 0.74x torch's CUDA kernel;
  // Apple GPUs likewise do 64-bit integer work as 32-bit pairs).
  I at(int op, uint x) const { return offset[op] + I(x) * inner_stride[op]; }
};

// Element offsets (of type I: uint where the host found the geometry
// narrow, else long) of the first N operands at the start of row `row` of
// the half shape (x = its innermost dim, y = the rest): 32-bit coordinates
// (the host allows no more than 2**32 - 1 elements; a GPU divides 64-bit
// integers in software), the outermost one what is left of the row, so a
// 2-D shape divides nothing.
template <int N, typename I>
inline row_operands<N, I> row_offsets(uint row, constant mps_ops::glu_geometry& g) {
  row_operands<N, I> r;
  for (int op = 0; op < N; ++op) {
    r.offset[op] = 0;
    r.inner_stride[op] = I(g.strides[op][g.ndim - 1]);
  }
  for (int d = g.ndim - 2; d >= 0; --d) {
    const uint size = uint(g.sizes[d]);
    const uint coord = d > 0 ? row % size : row;
    row /= size;
    for (int op = 0; op < N; ++op) {
      r.offset[op] += I(coord) * I(g.strides[op][d]);
    }
  }
  return r;
}

inline float sigmoid(float v) {
  return 1.0f / (1.0f + exp(-v));
}

}  // namespace

// Each thread takes up to K words of a row (glu_elements_per_thread), all
// loaded before any is computed, the row's threads stepping by their count
// (the strided element-wise kernels' grid, elementwise.h). A word is one
// element (E = single_elements<T>), or two halves or bfloat16 of a row whose
// operands are all contiguous along it (E = element_pairs<T>; the host
// counts the geometry in words): half the load and store instructions, and
// one packed conversion per stored pair.
// Operands: out, glu, b, da, db.
template <typename I, typename E>
inline void glu_jvp_row(device typename E::stored* out, constant typename E::stored* glu,
                        constant typename E::stored* b, constant typename E::stored* da,
                        constant typename E::stored* db, constant mps_ops::glu_geometry& g, uint2 pos,
                        uint2 grid) {
  constexpr uint K = mps_ops::glu_elements_per_thread;
  const row_operands<5, I> o = row_offsets<5, I>(pos.y, g);
  const uint inner = uint(g.sizes[g.ndim - 1]);
  typename E::word gluv[K], bv[K], dav[K], dbv[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint x = pos.x + k * grid.x;
    if (x < inner) {
      gluv[k] = E::load(glu[o.at(1, x)]);
      bv[k] = E::load(b[o.at(2, x)]);
      dav[k] = E::load(da[o.at(3, x)]);
      dbv[k] = E::load(db[o.at(4, x)]);
    }
  }
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint x = pos.x + k * grid.x;
    if (x < inner) {
      float result[E::width()];
      _Pragma("clang loop unroll(full)")
      for (uint j = 0; j < E::width(); ++j) {
        const float s = sigmoid(E::element(bv[k], j)), dbj = E::element(dbv[k], j);
        result[j] = E::element(dav[k], j) * s + E::element(gluv[k], j) * (dbj - s * dbj);
      }
      out[o.at(0, x)] = E::store(result);
    }
  }
}

// Operands: out_a, out_b, grad_a (grad_x's first half), a, b, dgrad_glu, da, db.
template <typename I, typename T>
inline void glu_backward_jvp_row(device T* out_a, device T* out_b, constant T* grad_a, constant T* a,
                                 constant T* b, constant T* dgrad_glu, constant T* da, constant T* db,
                                 constant mps_ops::glu_geometry& g, uint2 pos, uint2 grid) {
  constexpr uint K = mps_ops::glu_elements_per_thread;
  const row_operands<8, I> o = row_offsets<8, I>(pos.y, g);
  const uint inner = uint(g.sizes[g.ndim - 1]);
  float gav[K], av[K], bv[K], dgv[K], dav[K], dbv[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint x = pos.x + k * grid.x;
    if (x < inner) {
      gav[k] = float(grad_a[o.at(2, x)]);
      av[k] = float(a[o.at(3, x)]);
      bv[k] = float(b[o.at(4, x)]);
      dgv[k] = float(dgrad_glu[o.at(5, x)]);
      dav[k] = float(da[o.at(6, x)]);
      dbv[k] = float(db[o.at(7, x)]);
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
      out_a[o.at(0, x)] = static_cast<T>(dgrad_a);
      out_b[o.at(1, x)] = static_cast<T>(dgrad_a * (av[k] - glu) + ga * (dav[k] - dav[k] * s - glu * n));
    }
  }
}

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
  using E = mps_ops::single_elements<T>;
  if (g.narrow != 0) {
    glu_jvp_row<uint, E>(out, glu, b, da, db, g, pos, grid);
  } else {
    glu_jvp_row<long, E>(out, glu, b, da, db, g, pos, grid);
  }
}

// glu_jvp over rows whose operands are all contiguous along the row, of an
// even length, starting at even elements: the geometry in 32-bit words.
template <typename T>
kernel void glu_jvp_pairs(
    device uint* out [[buffer(0)]],
    constant uint* glu [[buffer(1)]],
    constant uint* b [[buffer(2)]],
    constant uint* da [[buffer(3)]],
    constant uint* db [[buffer(4)]],
    constant mps_ops::glu_geometry& g [[buffer(5)]],
    uint2 pos [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  using E = mps_ops::element_pairs<T>;
  if (g.narrow != 0) {
    glu_jvp_row<uint, E>(out, glu, b, da, db, g, pos, grid);
  } else {
    glu_jvp_row<long, E>(out, glu, b, da, db, g, pos, grid);
  }
}

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
  if (g.narrow != 0) {
    glu_backward_jvp_row<uint>(out_a, out_b, grad_a, a, b, dgrad_glu, da, db, g, pos, grid);
  } else {
    glu_backward_jvp_row<long>(out_a, out_b, grad_a, a, b, dgrad_glu, da, db, g, pos, grid);
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, glu_jvp, strided)
MPS_OPS_INSTANTIATE_FOR_TYPE(glu_jvp_pairs, dense, half)
MPS_OPS_INSTANTIATE_FOR_TYPE(glu_jvp_pairs, dense, bfloat)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, glu_backward_jvp, strided)
