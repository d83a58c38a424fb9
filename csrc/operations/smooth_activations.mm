// Host stubs of softplus (functional, out=), softplus_backward and
// tanh_backward (functional, grad_input=): `override` ops, whose stock MPS
// kernels run MPSGraph up to torch 2.14. Kernels in
// csrc/kernels/smooth_activations.metal; checks and messages are the CPU's.
#include "../runtime/elementwise_stubs.h"

#include "../kernels/smooth_activations_params.h"

namespace mps_ops {

namespace {

KernelCache& softplus_kernels() {
  static KernelCache kernels("softplus");
  return kernels;
}

KernelCache& softplus_backward_kernels() {
  static KernelCache kernels("softplus_backward");
  return kernels;
}

KernelCache& tanh_backward_kernels() {
  static KernelCache kernels("tanh_backward");
  return kernels;
}

softplus_params softplus_rule(const at::Scalar& beta, const at::Scalar& threshold) {
  return {beta.to<float>(), threshold.to<float>()};
}

void run_softplus(const at::Tensor& self, const at::Scalar& beta, const at::Scalar& threshold, const at::Tensor& out,
                  bool output_from_caller) {
  const softplus_params params = softplus_rule(beta, threshold);
  auto iter = elementwise_config(output_from_caller).add_output(out).add_const_input(self).build();
  exec_elementwise(softplus_kernels(), iter, self.scalar_type(), params);
}

}  // namespace

at::Tensor softplus(const at::Tensor& self, const at::Scalar& beta, const at::Scalar& threshold) {
  check_device("softplus", self);
  check_dtype("softplus", self);
  at::Tensor out = empty_output_like(self, self.scalar_type());
  run_softplus(self, beta, threshold, out, /*output_from_caller=*/false);
  return out;
}

// The CPU's iterator checks out='s dtype (the input's, exactly) before its
// dtype dispatch refuses a complex input.
at::Tensor& softplus_out(const at::Tensor& self, const at::Scalar& beta, const at::Scalar& threshold,
                         at::Tensor& out) {
  check_device("softplus", self);
  check_same_dtype(self.scalar_type(), {&out});
  check_dtype("softplus", self);
  check_elementwise_output("softplus", out, self.scalar_type(), self.sizes(), {&self}, OutputDtype::exact);
  run_softplus(self, beta, threshold, out, /*output_from_caller=*/true);
  return out;
}

// The backwards promote their operands to a common dtype (grad_output's
// layout leads) and write any dtype it casts to, as the CPU's iterator does.
at::Tensor softplus_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Scalar& beta,
                             const at::Scalar& threshold) {
  return binary(softplus_backward_kernels(), "softplus_backward", same_dtype, grad_output, self,
                softplus_rule(beta, threshold));
}

at::Tensor& softplus_backward_grad_input(const at::Tensor& grad_output, const at::Tensor& self,
                                         const at::Scalar& beta, const at::Scalar& threshold,
                                         at::Tensor& grad_input) {
  return binary_out(softplus_backward_kernels(), "softplus_backward", same_dtype, grad_output, self, grad_input,
                    softplus_rule(beta, threshold));
}

at::Tensor tanh_backward(const at::Tensor& grad_output, const at::Tensor& output) {
  return binary(tanh_backward_kernels(), "tanh_backward", same_dtype, grad_output, output);
}

at::Tensor& tanh_backward_grad_input(const at::Tensor& grad_output, const at::Tensor& output,
                                     at::Tensor& grad_input) {
  return binary_out(tanh_backward_kernels(), "tanh_backward", same_dtype, grad_output, output, grad_input);
}

}  // namespace mps_ops
