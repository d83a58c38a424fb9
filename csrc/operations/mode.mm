// Host stub of mode (torch.mode): the most frequent value of each slice and
// the index of its last occurrence. Kernel in csrc/kernels/mode.metal;
// checks and messages are the CPU's.
#include "../runtime/host_name.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/ops/empty.h>

namespace mps_ops {

std::tuple<at::Tensor, at::Tensor> mode(const at::Tensor& self, int64_t dim, bool keepdim) {
  static KernelCache kernels("mode");
  check_device("mode", self);
  check_dtype("mode", self);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  check_reduced_dims_not_empty("mode():", self, {d});
  const ReductionPlan plan = plan_reduction(self, {d});
  const auto& shape = keepdim || self.dim() == 0 ? plan.kept_shape : plan.dropped_shape;
  at::Tensor values = at::empty(shape, self.options());
  at::Tensor indices = at::empty(shape, self.options().dtype(at::kLong));
  // mode's kernel takes no parameters after the layout (test_bindings.py
  // found the no_params it was once bound).
  dispatch_reduction(kernels.get(Variant::reduce, self.scalar_type(), self.scalar_type()),
                     {&values, &indices}, self, plan, {});
  return {values, indices};
}

}  // namespace mps_ops
