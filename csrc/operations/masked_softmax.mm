// Host stubs of _masked_softmax and _masked_softmax_backward (the fast path
// of nn.MultiheadAttention and TransformerEncoderLayer); kernels in
// csrc/kernels/masked_softmax.metal. Mask types as on the CPU: 0, an (L, L)
// attention mask, and 1, a (B, L) padding mask, for a (B, H, L, L) input;
// 2 (or none), a mask of the input's shape. Types 0 and 1 are expanded to
// the input's shape here, and inputs made contiguous, so one reduction
// layout addresses input, mask and output alike.
#include "../runtime/host_name.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/ops/empty.h>

namespace mps_ops {

namespace {

void check_float(const char* op, const at::Tensor& t) {
  check_device(op, t);
  check_dtype(op, t);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(t.scalar_type()), "\"masked_softmax\" not implemented for '",
                              c10::toString(t.scalar_type()), "' on ", t.device());
}

}  // namespace

at::Tensor _masked_softmax(const at::Tensor& self, const at::Tensor& mask, std::optional<int64_t> dim_,
                           std::optional<int64_t> mask_type_) {
  static KernelCache kernels("masked_softmax");
  check_device("_masked_softmax", mask);
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Mask should be a boolean tensor");
  check_float("_masked_softmax", self);
  int64_t mask_type = mask_type_.value_or(2);
  if (mask.dim() != 2 || self.dim() != 4) {
    mask_type = 2;  // types 0 and 1 exist only for 2-D masks of 4-D inputs
  }
  at::Tensor full_mask = mask;
  if (mask_type == 1) {
    TORCH_CHECK(self.size(0) == mask.size(0) && self.size(2) == mask.size(1),
                "For mask_type == 1 mask shape should be (B, L)");
    full_mask = mask.view({self.size(0), 1, 1, self.size(2)}).expand(self.sizes());
  } else if (mask_type == 0) {
    TORCH_CHECK(self.size(2) == mask.size(0) && self.size(2) == mask.size(1),
                "For mask_type == 0 mask shape should be (L, L)");
    full_mask = mask.view({1, 1, self.size(2), self.size(2)}).expand(self.sizes());
  } else {
    TORCH_CHECK(self.sizes() == mask.sizes(), "For mask_type == 2 mask shape should match input shape");
  }
  const int64_t dim = at::maybe_wrap_dim(dim_.value_or(self.dim() - 1), self.dim());
  const at::Tensor input = self.contiguous();
  const at::Tensor mask_c = full_mask.contiguous();
  at::Tensor out = at::empty(self.sizes(), self.options());
  const ReductionPlan plan = plan_reduction(input, {dim});
  check_row_length("_masked_softmax", plan);
  dispatch_reduction(kernels.get(Variant::reduce, self.scalar_type(), self.scalar_type()), {&out},
                     {&input, &mask_c}, plan, {}, SliceMapping::rows);
  return out;
}

}  // namespace mps_ops

namespace mps_ops {

at::Tensor _masked_softmax_backward(const at::Tensor& grad_output, const at::Tensor& output,
                                    const at::Tensor& mask, std::optional<int64_t> dim_) {
  static KernelCache kernels("masked_softmax_backward");
  // The CPU's order: mask, grad_output's dtype, then output's.
  check_device("_masked_softmax_backward", mask);
  TORCH_CHECK(grad_output.sizes() == mask.sizes(), "Mask shape should match grad shape");
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Mask should be a boolean tensor");
  check_float("_masked_softmax_backward", grad_output);
  check_device("_masked_softmax_backward", output);
  TORCH_CHECK(output.scalar_type() == grad_output.scalar_type(), "expected scalar type ",
              grad_output.scalar_type(), " but found ", output.scalar_type());
  // The CPU reads output as if it had grad_output's shape; one of another
  // shape is refused here.
  TORCH_CHECK(output.sizes() == grad_output.sizes(), "_masked_softmax_backward: expected output of shape ",
              grad_output.sizes(), " (grad_output's), but got ", output.sizes());
  const int64_t dim = at::maybe_wrap_dim(dim_.value_or(output.dim() - 1), output.dim());
  const at::Tensor grad = grad_output.contiguous(), out = output.contiguous(), mask_c = mask.contiguous();
  at::Tensor grad_input = at::empty(output.sizes(), output.options());
  const ReductionPlan plan = plan_reduction(grad, {dim});
  check_row_length("_masked_softmax_backward", plan);
  dispatch_reduction(kernels.get(Variant::reduce, output.scalar_type(), output.scalar_type()),
                     {&grad_input}, {&grad, &out, &mask_c}, plan, {}, SliceMapping::rows);
  return grad_input;
}

}  // namespace mps_ops
