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

// Whether the tile holding element `first` lies wholly below count. Every
// tile but the grid's last does: kernels then take its elements through a
// second instantiation of their body with no check per element, loads,
// computation and stores in straight-line code where the compiler can
// interleave the elements. Behind a branch each, one element's chain ran
// after the other's on NVIDIA's compiler (H200, against the checked kernels:
// logit_ float32 0.82 -> 0.84x torch's CUDA kernel, half 0.87 -> 0.95x,
// bfloat16 0.87 -> 0.99x); Apple's compiler meets the same branches.
// Tile t is whole where t < count / tile: its end, (t + 1) * tile, wraps in
// 32 bits for the last tile of a count near 2**32 (dispatch_per_element's
// pieces reach 2**32 - 1 elements).
template <uint K>
constexpr bool per_element_whole_tile(uint first, uint count) {
  return first / (elementwise_tile * K) < count / (elementwise_tile * K);
}
static_assert(!per_element_whole_tile<8>(0xffffff00u, 0xffffffa0u) &&
                  per_element_whole_tile<8>(0xfffffe00u, 0xffffffa0u) &&
                  per_element_whole_tile<4>(127u, 128u) && !per_element_whole_tile<4>(128u, 200u),
              "a tile is whole exactly where it ends at or below count, without wrapping");

}  // namespace mps_ops
