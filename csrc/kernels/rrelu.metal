// rrelu_with_noise (functional, in place, out=). Training: where x <= 0 the
// output is x times a slope drawn uniformly from [lower, upper), which noise
// receives, elsewhere the output is x and noise becomes 1. The slopes come
// from Philox4x32-10 (mps_ops/philox.h) keyed by four words the host drew
// from the generator, the counter being the element's index: one pass, no
// noise tensor filled beforehand and read back. Evaluation: leaky_relu with
// the mean slope, noise untouched. NaN is not <= 0: it passes through with
// noise 1, as on the CPU.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/per_element.h>
#include <mps_ops/philox.h>
#include "rrelu_params.h"
using namespace metal;

// Up to K elements per thread (elements_per_thread; per_element.h's tiles),
// all of x loaded before any is computed: several loads in flight per
// thread, its set-up paid once for them all. In training one Philox block
// gives the slopes of four of a thread's elements (counter: the first one's
// index, unique to the thread and block).
template <typename T>
kernel void rrelu_with_noise(
    device T* out [[buffer(0)]],
    device T* noise [[buffer(1)]],
    constant T* x [[buffer(2)]],
    constant int* key [[buffer(3)]],
    constant mps_ops::rrelu_params& params [[buffer(4)]],
    uint thread_index [[thread_position_in_grid]]) {
  constexpr uint K = mps_ops::elements_per_thread(sizeof(T));
  static_assert(K % 4 == 0, "a Philox block gives four slopes");
  const uint first = mps_ops::per_element_first<K>(thread_index), step = mps_ops::elementwise_tile;
  const mps_ops::rrelu_params p = params;  // read once: the stores below could alias it
  T value[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * step;
    if (i < p.count) {
      value[k] = x[i];
    }
  }
  if (p.training == 0) {
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < K; ++k) {
      const uint i = first + k * step;
      if (i < p.count) {
        out[i] = float(value[k]) > 0.0f ? value[k] : static_cast<T>(float(value[k]) * p.slope);
      }
    }
    return;
  }
  const mps_ops::philox_cipher cipher = mps_ops::read_cipher(key);
  _Pragma("clang loop unroll(full)")
  for (uint block = 0; block < K / 4; ++block) {
    const mps_ops::philox_block words = cipher.block(first + 4 * block * step, 0u);
    _Pragma("clang loop unroll(full)")
    for (uint m = 0; m < 4; ++m) {
      const uint k = 4 * block + m, i = first + k * step;
      if (i < p.count) {
        if (float(value[k]) <= 0.0f) {
          const T slope = static_cast<T>(p.lower + mps_ops::unit_float(words.word[m]) * p.range);
          noise[i] = slope;
          out[i] = static_cast<T>(float(value[k]) * float(slope));
        } else {
          noise[i] = T(1);
          out[i] = value[k];
        }
      }
    }
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, rrelu_with_noise, dense)
