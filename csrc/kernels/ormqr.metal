// ormqr: other multiplied by Q = H_1 H_2 ... H_k (geqrf's reflectors,
// H_i = I - tau_i v_i v_i^T, v_i zero above i, one at i, input's column i
// below), from the left or the right, Q or its transpose. Q C applies H_k
// first, Q^T C H_1 first; C Q applies H_1 first, C Q^T H_k first. Each
// reflector changes every column of C independently from the left (every
// row from the right), so a thread takes one such vector of the result
// (already a copy of other) through all k reflectors: w = tau_i (v_i . c),
// c -= w v_i. No thread reads another's vector: no barriers.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>

#include "ormqr_params.h"
using namespace metal;

template <typename T>
kernel void ormqr(device T* result [[buffer(0)]],
                  constant T* input [[buffer(1)]],
                  constant T* tau [[buffer(2)]],
                  constant mps_ops::ormqr_params& p [[buffer(3)]],
                  uint2 position [[thread_position_in_grid]]) {
  device T* c = result + long(position.y) * p.result_batch_stride + long(position.x) * p.vector_stride;
  constant T* a = input + long(position.y) * p.input_batch_stride;
  constant T* taus = tau + long(position.y) * p.tau_batch_stride;
  for (long step = 0; step < p.reflectors; ++step) {
    const long i = p.ascending ? step : p.reflectors - 1 - step;
    const float t = float(taus[i]);
    // tau 0 is the identity, and v's trailing zeros touch nothing: skipped,
    // as LAPACK's larf skips them (no 0 * inf from other's elements there).
    if (t == 0.0f) {
      continue;
    }
    constant T* v = a + i * p.input_column_stride;  // v[j] = a[j, i] for j > i
    long end = p.length;
    while (end > i + 1 && v[(end - 1) * p.input_row_stride] == T(0)) {
      --end;
    }
    float dot = float(c[i * p.element_stride]);
    for (long j = i + 1; j < end; ++j) {
      dot += float(v[j * p.input_row_stride]) * float(c[j * p.element_stride]);
    }
    const float w = t * dot;
    c[i * p.element_stride] = T(float(c[i * p.element_stride]) - w);
    for (long j = i + 1; j < end; ++j) {
      c[j * p.element_stride] = T(float(c[j * p.element_stride]) - w * float(v[j * p.input_row_stride]));
    }
  }
}

MPS_OPS_INSTANTIATE_FOR_TYPE(ormqr, dense, float)
