// Host stubs of threshold (functional, out=, in place), threshold_backward
// (ReLU's backward) and hardtanh_backward (functional, grad_input=):
// `override` ops, whose stock MPS kernels run MPSGraph in every training
// step. Kernels in csrc/kernels/threshold.metal; checks and messages are
// the CPU's.
#include "../runtime/elementwise_stubs.h"

#include "../kernels/threshold_params.h"

#include <ATen/Dispatch.h>
#include <ATen/ops/result_type.h>

namespace mps_ops {

namespace {

// threshold's kernels cover what the CPU's dtype dispatch does: the
// integral and floating types, not bool or uint16/32/64.
void check_threshold_dtype(const char* op, c10::ScalarType dtype, const at::Tensor& like) {
  const bool covered = at::isFloatingType(dtype) || dtype == at::kByte || dtype == at::kChar ||
                       dtype == at::kShort || dtype == at::kInt || dtype == at::kLong;
  TORCH_CHECK_NOT_IMPLEMENTED(covered, "\"", op, "\" not implemented for '", c10::toString(dtype), "' on ",
                              like.device());
}

// The CPU's conversions (Scalar::to, with its overflow errors): a floating
// dtype compares in float against the bound as given and replaces with
// the value rounded to the dtype; an integer dtype truncates both to itself.
threshold_params threshold_rule(c10::ScalarType dtype, const at::Scalar& bound, const at::Scalar& value) {
  threshold_params p{};
  if (at::isFloatingType(dtype)) {
    p.bound = bound.to<float>();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "threshold",
                                    [&] { p.value = static_cast<float>(value.to<scalar_t>()); });
  } else {
    AT_DISPATCH_INTEGRAL_TYPES(dtype, "threshold", [&] {
      p.bound_integer = static_cast<long>(bound.to<scalar_t>());
      p.value_integer = static_cast<long>(value.to<scalar_t>());
    });
  }
  return p;
}

KernelCache& threshold_kernels() {
  static KernelCache kernels("threshold");
  return kernels;
}

KernelCache& threshold_backward_kernels() {
  static KernelCache kernels("threshold_backward");
  return kernels;
}

KernelCache& hardtanh_backward_kernels() {
  static KernelCache kernels("hardtanh_backward");
  return kernels;
}

// threshold into `out` (self's shape and dtype), self checked.
void run_threshold(const at::Tensor& self, const at::Scalar& bound, const at::Scalar& value, at::Tensor& out,
                   bool output_from_caller) {
  const threshold_params params = threshold_rule(self.scalar_type(), bound, value);
  auto iter = elementwise_config(output_from_caller).add_output(out).add_const_input(self).build();
  exec_elementwise(threshold_kernels(), iter, self.scalar_type(), params);
}

void check_threshold_input(const char* op, const at::Tensor& self) {
  check_device(op, self);
  check_dtype(op, self);
  check_threshold_dtype(op, self.scalar_type(), self);
}

}  // namespace

at::Tensor threshold(const at::Tensor& self, const at::Scalar& bound, const at::Scalar& value) {
  check_threshold_input("threshold", self);
  at::Tensor out = empty_output_like(self, self.scalar_type());
  run_threshold(self, bound, value, out, /*output_from_caller=*/false);
  return out;
}

at::Tensor& threshold_out(const at::Tensor& self, const at::Scalar& bound, const at::Scalar& value,
                          at::Tensor& out) {
  check_out_dtype_first(self.scalar_type(), out, OutputDtype::castable);
  check_threshold_input("threshold", self);
  if (!check_elementwise_output("threshold", out, self.scalar_type(), self.sizes(), {&self}, OutputDtype::castable)) {
    out.copy_(mps_ops::threshold(self, bound, value));
    return out;
  }
  run_threshold(self, bound, value, out, /*output_from_caller=*/true);
  return out;
}

at::Tensor& threshold_(at::Tensor& self, const at::Scalar& bound, const at::Scalar& value) {
  check_threshold_input("threshold_", self);
  check_inplace("threshold_", self);
  run_threshold(self, bound, value, self, /*output_from_caller=*/true);
  return self;
}

namespace {

// The common dtype of a backward's operands, which its kernel computes in.
c10::ScalarType backward_dtype(const char* op, const at::Tensor& grad_output, const at::Tensor& self) {
  check_dtype(op, grad_output);
  check_dtype(op, self);
  return at::result_type(grad_output, self);
}

}  // namespace

at::Tensor threshold_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Scalar& bound) {
  const auto dtype = backward_dtype("threshold_backward", grad_output, self);
  check_threshold_dtype("threshold_backward", dtype, self);
  return binary(threshold_backward_kernels(), "threshold_backward", same_dtype, self, grad_output, threshold_rule(dtype, bound, 0));
}

at::Tensor& threshold_backward_grad_input(const at::Tensor& grad_output, const at::Tensor& self,
                                          const at::Scalar& bound, at::Tensor& grad_input) {
  check_out_dtype_first(at::result_type(grad_output, self), grad_input, OutputDtype::castable);
  const auto dtype = backward_dtype("threshold_backward", grad_output, self);
  check_threshold_dtype("threshold_backward", dtype, self);
  return binary_out(threshold_backward_kernels(), "threshold_backward", same_dtype, self, grad_output, grad_input,
                    threshold_rule(dtype, bound, 0));
}

namespace {

// The CPU's kernel exists for floating types only; it compares in float.
hardtanh_backward_params hardtanh_rule(const at::Tensor& grad_output, const at::Tensor& self,
                                       const at::Scalar& lower, const at::Scalar& upper) {
  const auto dtype = backward_dtype("hardtanh_backward", grad_output, self);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(dtype), "\"hardtanh_backward\" not implemented for '",
                              c10::toString(dtype), "' on ", self.device());
  return hardtanh_backward_params{lower.to<float>(), upper.to<float>()};
}

}  // namespace

at::Tensor hardtanh_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Scalar& min_val,
                             const at::Scalar& max_val) {
  const hardtanh_backward_params params = hardtanh_rule(grad_output, self, min_val, max_val);
  return binary(hardtanh_backward_kernels(), "hardtanh_backward", same_dtype, grad_output, self, params);
}

at::Tensor& hardtanh_backward_grad_input(const at::Tensor& grad_output, const at::Tensor& self,
                                         const at::Scalar& min_val, const at::Scalar& max_val,
                                         at::Tensor& grad_input) {
  check_out_dtype_first(at::result_type(grad_output, self), grad_input, OutputDtype::castable);
  const hardtanh_backward_params params = hardtanh_rule(grad_output, self, min_val, max_val);
  return binary_out(hardtanh_backward_kernels(), "hardtanh_backward", same_dtype, grad_output, self, grad_input, params);
}

}  // namespace mps_ops
