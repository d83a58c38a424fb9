// The in-place random fills cauchy_, log_normal_ and geometric_ (fills for
// torch 2.9 and 2.10; host stubs in csrc/operations/random_fills.mm): a
// thread per 4 elements draws one Philox block (counter: the thread's
// index, 0 and key words 2 and 3), whose 4 words make its 4 open uniforms
// on (0, 1) (a Philox block's 10 rounds cost more than the transforms: one
// block per element left 3 words of 4 unused), and transforms them as the
// CPU's samplers do, in float. Its elements lie a grid apart (index,
// index + threads, ...), so each store of a SIMD group is one contiguous
// run (4 consecutive elements a thread made them 4 runs a quarter used).
// The loops over the 4 have a fixed trip count, so they unroll and the
// block's words stay in registers (a loop that ended at the last element
// indexed them at run time, through memory: 0.39-0.73x torch on the H200).
// The transforms:
//   cauchy_      median + sigma tan(pi (U - 1/2))
//   log_normal_  exp(mean + std N), N by Box and Muller: two normals from
//                each pair of uniforms
//   geometric_   ceil(log U / log(1 - p)), the trials up to the first success
//                (times the host's 1 / log(1 - p))
// An integer geometric_ past the dtype's range saturates at its largest
// value (the CPU's conversion from double gives garbage there).
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/philox.h>
#include "random_fills_params.h"
using namespace metal;

namespace {

inline mps_ops::philox_block thread_block(uint thread_index, constant int* key) {
  return mps_ops::philox4x32(thread_index, 0u, uint(key[2]), uint(key[3]), uint(key[0]), uint(key[1]));
}

// value (>= 1) in T: integers saturate, floats round (to infinity past
// their range).
template <typename T>
struct count_in {
  static T from(float value) {
    return value >= float(numeric_limits<T>::max()) ? numeric_limits<T>::max() : static_cast<T>(value);
  }
};
template <> struct count_in<float> {
  static float from(float value) { return value; }
};
template <> struct count_in<half> {
  static half from(float value) { return static_cast<half>(value); }
};
template <> struct count_in<bfloat> {
  static bfloat from(float value) { return static_cast<bfloat>(value); }
};

// The threads: a quarter of the elements, rounded up.
inline uint threads_for(uint numel) {
  return numel / 4u + (numel % 4u != 0 ? 1u : 0u);
}

}  // namespace

template <typename T>
kernel void cauchy(device T* out [[buffer(0)]],
                   constant int* key [[buffer(1)]],
                   constant mps_ops::random_fill_params& p [[buffer(2)]],
                   uint index [[thread_position_in_grid]]) {
  const mps_ops::philox_block block = thread_block(index, key);
  const uint threads = threads_for(p.numel);
  for (uint k = 0; k < 4; ++k) {
    const uint element = index + k * threads;
    if (element >= p.numel) {
      break;
    }
    const float u = mps_ops::open_unit_float(block.word[k]);
    out[element] = static_cast<T>(p.location + p.scale * tan(3.14159265f * (u - 0.5f)));
  }
}

template <typename T>
kernel void log_normal(device T* out [[buffer(0)]],
                       constant int* key [[buffer(1)]],
                       constant mps_ops::random_fill_params& p [[buffer(2)]],
                       uint index [[thread_position_in_grid]]) {
  const mps_ops::philox_block block = thread_block(index, key);
  float normals[4];
  for (uint pair = 0; pair < 2; ++pair) {
    const mps_ops::normal_pair drawn = mps_ops::box_muller(mps_ops::open_unit_float(block.word[2 * pair]),
                                                           mps_ops::open_unit_float(block.word[2 * pair + 1]));
    normals[2 * pair] = drawn.first;
    normals[2 * pair + 1] = drawn.second;
  }
  const uint threads = threads_for(p.numel);
  for (uint k = 0; k < 4; ++k) {
    const uint element = index + k * threads;
    if (element >= p.numel) {
      break;
    }
    out[element] = static_cast<T>(exp(p.location + p.scale * normals[k]));
  }
}

template <typename T>
kernel void geometric(device T* out [[buffer(0)]],
                      constant int* key [[buffer(1)]],
                      constant mps_ops::random_fill_params& p [[buffer(2)]],
                      uint index [[thread_position_in_grid]]) {
  const mps_ops::philox_block block = thread_block(index, key);
  const uint threads = threads_for(p.numel);
  for (uint k = 0; k < 4; ++k) {
    const uint element = index + k * threads;
    if (element >= p.numel) {
      break;
    }
    const float u = mps_ops::open_unit_float(block.word[k]);
    out[element] = count_in<T>::from(ceil(log(u) * p.scale));
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, cauchy, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, log_normal, dense)
MPS_OPS_FOR_INTEGRAL(MPS_OPS_INSTANTIATE_FOR_TYPE, geometric, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, geometric, dense)
