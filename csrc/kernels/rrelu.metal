// rrelu_with_noise (functional, in place, out=). Training: where x <= 0 the
// output is x times the slope already drawn into noise (the host fills noise
// with uniform(lower, upper) from the generator first), elsewhere the output
// is x and noise becomes 1. Evaluation: leaky_relu with the mean slope,
// noise untouched. NaN is not <= 0: it passes through with noise 1, as on
// the CPU.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include "rrelu_params.h"
using namespace metal;

template <typename T>
kernel void rrelu_with_noise(
    device T* out [[buffer(0)]],
    device T* noise [[buffer(1)]],
    constant T* x [[buffer(2)]],
    constant mps_ops::rrelu_params& params [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  const T value = x[index];
  if (params.training == 0) {
    out[index] = float(value) > 0.0f ? value : static_cast<T>(float(value) * params.slope);
  } else if (float(value) <= 0.0f) {
    out[index] = static_cast<T>(float(value) * float(noise[index]));
  } else {
    noise[index] = T(1);
    out[index] = value;
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, rrelu_with_noise, dense)
