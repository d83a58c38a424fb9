// Host stub of _prelu_kernel (PReLU's forward): an `override` op, whose
// stock MPS kernel runs MPSGraph. Kernel in csrc/kernels/prelu.metal.
// The CPU's rules: floating types only, self and weight of one dtype.
#include "../runtime/elementwise.h"
#include "../runtime/elementwise_stubs.h"

#include <ATen/ExpandUtils.h>

namespace mps_ops {

at::Tensor _prelu_kernel(const at::Tensor& self, const at::Tensor& weight) {
  static KernelCache kernels("prelu");
  const char* op = "_prelu_kernel";
  check_device(op, self);
  check_device(op, weight);
  check_dtype(op, self);
  // The CPU's order: its iterator's dtype and shape checks, then its dtype
  // dispatch.
  check_same_dtype(self.scalar_type(), {&weight});
  (void)at::infer_size(self.sizes(), weight.sizes());
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(self.scalar_type()), "' on ", self.device());
  return binary(kernels, op, same_dtype, self, weight);
}

// The CPU's order: its iterator's checks (dtypes as self's, shapes
// broadcast), then its dtype dispatch. Outputs of the broadcast shape, in the
// inputs' layout (the iterator's).
std::tuple<at::Tensor, at::Tensor> _prelu_kernel_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                                          const at::Tensor& weight) {
  static KernelCache kernels("prelu_backward");
  const char* op = "_prelu_kernel_backward";
  check_devices(op, {&grad_output, &self, &weight});
  check_dtype(op, self);
  check_same_dtype(self.scalar_type(), {&weight, &grad_output});
  at::Tensor grad_input, grad_weight;
  at::TensorIterator iter = elementwise_config(false)
                                .add_output(grad_input)
                                .add_output(grad_weight)
                                .add_const_input(self)
                                .add_const_input(weight)
                                .add_const_input(grad_output)
                                .build();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"prelu_backward_cpu\" not implemented for '",
                              c10::toString(self.scalar_type()), "' on ", self.device(), " (", op, ")");
  exec_elementwise(kernels, iter, self.scalar_type());
  return {iter.output(0), iter.output(1)};
}

}  // namespace mps_ops
