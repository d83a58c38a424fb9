// rrelu_with_noise (functional, in place, out=). Training: where x <= 0 the
// output is x times the slope already drawn into noise (the host fills noise
// with uniform(lower, upper) from the generator first), elsewhere the output
// is x and noise becomes 1. Evaluation: leaky_relu with the mean slope,
// noise untouched. NaN is not <= 0: it passes through with noise 1, as on
// the CPU.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/per_element.h>
#include "rrelu_params.h"
using namespace metal;

// Up to K elements per thread (elements_per_thread; per_element.h's tiles),
// all of x loaded before any is computed: several loads in flight per
// thread, its set-up paid once for them all.
template <typename T>
kernel void rrelu_with_noise(
    device T* out [[buffer(0)]],
    device T* noise [[buffer(1)]],
    constant T* x [[buffer(2)]],
    constant mps_ops::rrelu_params& params [[buffer(3)]],
    uint thread_index [[thread_position_in_grid]]) {
  constexpr uint K = mps_ops::elements_per_thread(sizeof(T));
  const uint first = mps_ops::per_element_first<K>(thread_index), step = mps_ops::elementwise_tile;
  const uint count = params.count;  // read once: the stores below could alias it
  T value[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * step;
    if (i < count) {
      value[k] = x[i];
    }
  }
  if (params.training == 0) {
    const float mean_slope = params.slope;  // read once, as count
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < K; ++k) {
      const uint i = first + k * step;
      if (i < count) {
        out[i] = float(value[k]) > 0.0f ? value[k] : static_cast<T>(float(value[k]) * mean_slope);
      }
    }
    return;
  }
  // Every slope a non-positive element needs is loaded before any store: a
  // store to out could alias noise for all the compiler knows, so loads
  // placed after stores would wait for them, one round trip per element
  // (H100: 800 -> 214 GB/s when they did).
  float slope[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * step;
    slope[k] = 1.0f;
    if (i < count && float(value[k]) <= 0.0f) {
      slope[k] = float(noise[i]);
    }
  }
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * step;
    if (i < count) {
      if (float(value[k]) <= 0.0f) {
        out[i] = static_cast<T>(float(value[k]) * slope[k]);
      } else {
        noise[i] = T(1);
        out[i] = value[k];
      }
    }
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, rrelu_with_noise, dense)
