// The kernel side of csrc/runtime/per_element.h's dispatch_per_element with
// several elements per thread: the dense element-wise kernels' tiles
// (elementwise.h), for kernels that compute each element from its own
// coordinates (pools, factories).
#pragma once
#include <metal_stdlib>

#include <mps_ops/shape_limits.h>

namespace mps_ops {

// The first element of thread `thread_index` when each takes up to K: lane l
// of tile t takes t * tile * K + l, then steps of elementwise_tile. Each
// SIMD-group load or store stays contiguous and a thread's elements lie
// within tile * K neighbouring ones (same DRAM page), on an Apple GPU as on
// any other.
template <uint K>
inline uint per_element_first(uint thread_index) {
  return thread_index / elementwise_tile * (elementwise_tile * K) + thread_index % elementwise_tile;
}

}  // namespace mps_ops
