#include "per_element.h"

#include "kernel_function.h"

#include "../kernels/include/mps_ops/shape_limits.h"

namespace mps_ops {

void dispatch_per_element(KernelCache& kernels, const at::Tensor& grid_like,
                          std::initializer_list<const at::Tensor*> operands, KernelParams params,
                          unsigned per_thread) {
  if (grid_like.numel() == 0) {
    return;
  }
  TORCH_CHECK(grid_like.numel() <= UINT32_MAX, "mps_ops: ", kernels.op(),
              " over more than 2**32 - 1 elements");
  KernelFunction function(kernels.get(Variant::dense, grid_like.scalar_type(), grid_like.scalar_type()));
  function.bind_operand_list(operands).bind(params);
  function.dispatch(Dim3{tiled_threads(static_cast<uint64_t>(grid_like.numel()), per_thread), 1, 1});
}

uint32_t tiled_threads(uint64_t n, unsigned per_thread) {
  const uint64_t tile = static_cast<uint64_t>(elementwise_tile) * per_thread;
  return static_cast<uint32_t>(per_thread <= 1 ? n : (n + tile - 1) / tile * elementwise_tile);
}

}  // namespace mps_ops
