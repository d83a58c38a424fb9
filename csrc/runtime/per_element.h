// The dispatch shape shared by host stubs whose kernels take one thread per
// element of one tensor (pools, segment reductions, logspace).
#pragma once

#include "host_name.h"
#include "kernel_params.h"

#include <ATen/core/Tensor.h>

#include <initializer_list>

namespace mps_ops {

// One thread per element of `grid_like` (dense variant, its dtype): the
// operands (outputs first) in the first slots, then `params`. With
// per_thread > 1, each thread takes up to per_thread elements in the tiles
// of the element-wise kernels (shape_limits.h's elementwise_tile: lane l of
// a tile takes l, l + tile, ... of the tile's tile * per_thread neighbouring
// elements; per_element.h's per_element_first gives a thread's first), the
// grid a whole number of tiles; the kernel stops at the element count.
void dispatch_per_element(KernelCache& kernels, const at::Tensor& grid_like,
                          std::initializer_list<const at::Tensor*> operands, KernelParams params,
                          unsigned per_thread = 1);

// The threads of such a grid over n elements: n for one per thread, else
// whole tiles of elementwise_tile threads covering n (the element-wise
// kernels' dense grids too).
uint32_t tiled_threads(uint64_t n, unsigned per_thread);

}  // namespace mps_ops
