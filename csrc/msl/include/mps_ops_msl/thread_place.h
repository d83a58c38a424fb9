// Where a thread stands in Metal's compute model, the same for every C++
// target: grid sizes, the SIMD width (Apple SIMD groups and CUDA warps are both
// 32 wide) and one thread's place as the built-in attributes describe it.
// Plain C++ with no MSL types: the targets' host-side ABI headers
// (kernel_abi.h, launch_abi.h) include it too.
#pragma once

#include <stdint.h>

namespace mps_ops_msl {

struct grid3 {
  uint32_t x, y, z;
};

constexpr uint32_t simd_width = 32;

struct thread_place {
  grid3 in_grid;
  grid3 in_group;
  grid3 group_in_grid;
  grid3 grid_size;
  grid3 group_size;  // of this (possibly clipped) threadgroup
  grid3 groups;
  uint32_t index_in_group;  // thread_index_in_threadgroup
};

}  // namespace mps_ops_msl
