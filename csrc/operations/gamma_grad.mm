// Host stubs of the reparameterized gradients of Gamma and Beta draws:
// _standard_gamma_grad (a `fill` for torch 2.9 to 2.11) and _dirichlet_grad
// (2.9 to 2.12), the backward of torch.distributions' Gamma, Chi2, Beta and
// Dirichlet rsample. Element-wise kernels in csrc/kernels/gamma_grad.metal.
#include "../runtime/elementwise.h"
#include "../runtime/op_checks.h"

#include <ATen/ExpandUtils.h>

namespace mps_ops {
namespace {

// The CPU's order: its iterator's checks (one dtype, the first operand's;
// shapes that broadcast), then its floating dispatch; its result as
// first_operand_output lays it out.
at::Tensor run_gradient(KernelCache& kernels, const char* op, const char* cpu_name,
                        std::initializer_list<const at::Tensor*> operands) {
  const at::Tensor& first = **operands.begin();
  check_devices(op, operands);
  check_same_dtype(first.scalar_type(), operands);
  std::vector<int64_t> shape = first.sizes().vec();
  for (const at::Tensor* t : operands) {
    shape = at::infer_size(shape, t->sizes());
  }
  check_dtype(op, first);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(first.scalar_type()), "\"", cpu_name, "\" not implemented for '",
                              c10::toString(first.scalar_type()), "' on ", first.device());
  at::Tensor out = first_operand_output(operands, shape);
  at::TensorIteratorConfig config = elementwise_config(/*output_from_caller=*/false);
  config.add_output(out);
  for (const at::Tensor* t : operands) {
    config.add_const_input(*t);
  }
  at::TensorIterator iter = config.build();
  exec_elementwise(kernels, iter, first.scalar_type());
  return out;
}

}  // namespace

at::Tensor _standard_gamma_grad(const at::Tensor& self, const at::Tensor& output) {
  static KernelCache kernels("standard_gamma_grad");
  return run_gradient(kernels, "_standard_gamma_grad", "_standard_gamma_grad_cpu", {&self, &output});
}

at::Tensor _dirichlet_grad(const at::Tensor& x, const at::Tensor& alpha, const at::Tensor& total) {
  static KernelCache kernels("dirichlet_grad");
  return run_gradient(kernels, "_dirichlet_grad", "_dirichlet_grad_cpu", {&x, &alpha, &total});
}

}  // namespace mps_ops
