#include "per_element.h"

#include "kernel_function.h"

#include <ATen/ops/empty.h>

namespace mps_ops {

void dispatch_per_element(KernelCache& kernels, const at::Tensor& grid_like,
                          std::initializer_list<const at::Tensor*> operands, const void* params,
                          size_t size) {
  if (grid_like.numel() == 0) {
    return;
  }
  TORCH_CHECK(grid_like.numel() <= UINT32_MAX, "mps_ops: ", kernels.op(),
              " over more than 2**32 - 1 elements");
  KernelFunction function(kernels.get(Variant::dense, grid_like.scalar_type(), grid_like.scalar_type()));
  function.set_bytes(function.set_operands(operands), params, size);
  function.dispatch(Dim3{static_cast<uint32_t>(grid_like.numel()), 1, 1});
}

at::Tensor contiguous_target(const at::Tensor& out) {
  return out.is_contiguous() ? out : at::empty(out.sizes(), out.options());
}

void copy_back(at::Tensor& out, const at::Tensor& target) {
  if (!target.is_same(out)) {
    out.copy_(target);
  }
}

}  // namespace mps_ops
