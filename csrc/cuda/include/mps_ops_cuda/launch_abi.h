// The one kernel parameter of every CUDA entry point the prepass writes (one
// `extern "C" __global__` function per [[host_name]] instantiation): what a
// Metal dispatch binds, as the host passes it by value. Plain C++, no CUDA
// attributes, so the host side of the CUDA backend can include it too.
//
// Launch geometry (Metal's dispatchThreads, computed on the host so that no
// thread divides to find it):
//   blockDim  = (group.x * group.y * group.z, 1, 1): a threadgroup is a 1-D
//               block, so SIMD groups are warps of the linear thread index,
//               as on Metal;
//   gridDim   = (groups.x * groups.y * groups.z, 1, 1): every threadgroup is
//               folded into blockIdx.x (x fastest), since gridDim.y and .z
//               stop at 65535 and Metal grids do not;
//   dynamic shared memory = the [[threadgroup(N)]] arguments, each at
//               threadgroup_offsets[N] (16-aligned, as Metal's lengths are).
#pragma once

#include <stdint.h>

#include <mps_ops_msl/thread_place.h>

namespace mps_ops_cuda {

using ::mps_ops_msl::grid3;

// [[buffer(N)]] indices run 0..30, as Metal's argument table.
constexpr int max_buffers = 31;
// Metal's limit on threads per threadgroup; every entry is compiled for it
// (__launch_bounds__), so any group Metal accepts can be launched.
constexpr uint32_t max_threads_per_group = 1024;

struct dispatch_params {
  // Device address of each bound [[buffer(N)]] (bytes a stub sets inline are
  // copied to device memory by the host); null where nothing is bound.
  void* buffers[max_buffers];
  // Byte offset of each [[threadgroup(N)]] argument in dynamic shared memory.
  uint32_t threadgroup_offsets[max_buffers];
  grid3 threads;  // the whole grid, in threads
  grid3 group;    // threads per threadgroup (unclipped)
  grid3 groups;   // ceil(threads / group) per axis
  // Nonzero: block b runs threadgroup gridDim.x - 1 - b, so the GPU starts
  // the groups last to first (MPS_OPS_CUDA_REVERSE_GROUPS=1, as the
  // emulator's reverse_group_order): results that change expose an
  // assumption about the order groups run in.
  uint32_t reverse_group_order;
};

}  // namespace mps_ops_cuda
