// Forward-mode derivatives of GLU (glu(x) = a * sigmoid(b), x = [a, b]
// halved along dim): glu_jvp gives d(glu) from dx, glu_backward_jvp gives
// d(grad_x) from dx, grad_x's first half and d(grad_glu). One thread per
// element of the half shape; every operand is a view (a half of x, dx or
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

// Element offsets of the first n operands at position `flat` of the half shape.
inline void operand_offsets(long flat, constant mps_ops::glu_geometry& g, int n, thread long* offsets) {
  for (int op = 0; op < n; ++op) {
    offsets[op] = 0;
  }
  for (int d = g.ndim - 1; d >= 0; --d) {
    const long coord = flat % g.sizes[d];
    flat /= g.sizes[d];
    for (int op = 0; op < n; ++op) {
      offsets[op] += coord * g.strides[op][d];
    }
  }
}

inline float sigmoid(float v) {
  return 1.0f / (1.0f + exp(-v));
}

}  // namespace

// Operands: out, glu, b, da, db.
template <typename T>
kernel void glu_jvp(
    device T* out [[buffer(0)]],
    constant T* glu [[buffer(1)]],
    constant T* b [[buffer(2)]],
    constant T* da [[buffer(3)]],
    constant T* db [[buffer(4)]],
    constant mps_ops::glu_geometry& g [[buffer(5)]],
    uint index [[thread_position_in_grid]]) {
  long o[5];
  operand_offsets(long(index), g, 5, o);
  const float s = sigmoid(float(b[o[2]]));
  const float dbv = float(db[o[4]]);
  out[o[0]] = static_cast<T>(float(da[o[3]]) * s + float(glu[o[1]]) * (dbv - s * dbv));
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
    uint index [[thread_position_in_grid]]) {
  long o[8];
  operand_offsets(long(index), g, 8, o);
  const float s = sigmoid(float(b[o[4]]));
  const float av = float(a[o[3]]), dav = float(da[o[6]]), dbv = float(db[o[7]]);
  const float ga = float(grad_a[o[2]]), glu = av * s;
  const float n = dbv - dbv * s;
  const float dgrad_a = float(dgrad_glu[o[5]]) * s + ga * n;
  out_a[o[0]] = static_cast<T>(dgrad_a);
  out_b[o[1]] = static_cast<T>(dgrad_a * (av - glu) + ga * (dav - dav * s - glu * n));
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, glu_jvp, strided)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, glu_backward_jvp, strided)
