#include "per_element.h"

#include "kernel_function.h"

namespace mps_ops {

void dispatch_per_element(KernelCache& kernels, const at::Tensor& grid_like,
                          std::initializer_list<const at::Tensor*> operands, KernelParams params) {
  if (grid_like.numel() == 0) {
    return;
  }
  TORCH_CHECK(grid_like.numel() <= UINT32_MAX, "mps_ops: ", kernels.op(),
              " over more than 2**32 - 1 elements");
  KernelFunction function(kernels.get(Variant::dense, grid_like.scalar_type(), grid_like.scalar_type()));
  function.bind_operand_list(operands).bind(params);
  function.dispatch(Dim3{static_cast<uint32_t>(grid_like.numel()), 1, 1});
}

}  // namespace mps_ops
