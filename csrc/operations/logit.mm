// Host stubs of logit_ (a fill: torch's MPS backend lacks the in-place form)
// and of logit, logit.out and logit_backward (overrides: torch's run
// MPSGraph). Kernels in csrc/kernels/logit.metal.
#include "../runtime/elementwise_stubs.h"

#include "../kernels/logit_params.h"

namespace mps_ops {

namespace {

KernelCache& logit_kernels() {
  static KernelCache kernels("logit");
  return kernels;
}

KernelCache& logit_backward_kernels() {
  static KernelCache kernels("logit_backward");
  return kernels;
}

// No eps: a negative bound, which the kernel takes for "no clamp".
logit_params params_of(std::optional<double> eps) { return {eps ? static_cast<float>(*eps) : -1.0f}; }

}  // namespace

at::Tensor& logit_(at::Tensor& self, std::optional<double> eps) {
  check_inplace("logit_", self);
  // The CPU's in-place rule: a float result cannot go into an integer self.
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "result type Float can't be cast to the ",
              "desired output type ", self.scalar_type());
  const logit_params params = params_of(eps);
  auto iter = elementwise_config(/*output_from_caller=*/true).add_output(self).add_const_input(self).build();
  exec_elementwise(logit_kernels(), iter, self.scalar_type(), params);
  return self;
}

at::Tensor logit(const at::Tensor& self, std::optional<double> eps) {
  const logit_params params = params_of(eps);
  return unary_float(logit_kernels(), "logit", self, params);
}

at::Tensor& logit_out(const at::Tensor& self, std::optional<double> eps, at::Tensor& out) {
  const logit_params params = params_of(eps);
  return unary_float_out(logit_kernels(), "logit", self, out, params);
}

// The backward promotes its operands to a common dtype and writes any dtype
// it casts to, as the CPU's iterator does.
at::Tensor logit_backward(const at::Tensor& grad_output, const at::Tensor& self, std::optional<double> eps) {
  const logit_params params = params_of(eps);
  return binary(logit_backward_kernels(), "logit_backward", same_dtype, grad_output, self, params);
}

at::Tensor& logit_backward_grad_input(const at::Tensor& grad_output, const at::Tensor& self,
                                      std::optional<double> eps, at::Tensor& grad_input) {
  const logit_params params = params_of(eps);
  return binary_out(logit_backward_kernels(), "logit_backward", same_dtype, grad_output, self, grad_input, params);
}

}  // namespace mps_ops
