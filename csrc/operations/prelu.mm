// Host stub of _prelu_kernel (PReLU's forward): an `override` op, whose
// stock MPS kernel runs MPSGraph. Kernel in csrc/kernels/prelu.metal.
// The CPU's rules: floating types only, self and weight of one dtype.
#include "../runtime/elementwise_stubs.h"

namespace mps_ops {

at::Tensor _prelu_kernel(const at::Tensor& self, const at::Tensor& weight) {
  static KernelCache kernels("prelu");
  const char* op = "_prelu_kernel";
  check_device(op, self);
  check_device(op, weight);
  check_dtype(op, self);
  // The CPU's order: its iterator's dtype check, then its dtype dispatch.
  TORCH_CHECK(weight.scalar_type() == self.scalar_type(), "Found dtype ", weight.scalar_type(), " but expected ",
              self.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(self.scalar_type()), "' on ", self.device());
  return binary(kernels, op, same_dtype, self, weight);
}

}  // namespace mps_ops
