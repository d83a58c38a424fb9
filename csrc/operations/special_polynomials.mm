// Host stubs of torch.special.laguerre_polynomial_l and
// legendre_polynomial_p: binary ops whose integer inputs compute in float
// (the x_scalar / n_scalar overloads are composite and land here with a 0-dim
// CPU operand); kernels in csrc/kernels/special_polynomials.metal.
#include "elementwise_stubs.h"

namespace mps_ops {

#define MPS_OPS_POLYNOMIAL_STUBS(ATEN_NAME, KERNEL_OP)                                         \
  at::Tensor& ATEN_NAME##_out(const at::Tensor& x, const at::Tensor& n, at::Tensor& out) {     \
    static KernelCache kernels(KERNEL_OP);                                                     \
    return binary_out(kernels, #ATEN_NAME, float_result_type, x, n, out);                      \
  }                                                                                            \
  at::Tensor ATEN_NAME(const at::Tensor& x, const at::Tensor& n) {                             \
    static KernelCache kernels(KERNEL_OP);                                                     \
    return binary(kernels, #ATEN_NAME, float_result_type, x, n);                               \
  }

MPS_OPS_POLYNOMIAL_STUBS(special_laguerre_polynomial_l, "laguerre_polynomial_l")
MPS_OPS_POLYNOMIAL_STUBS(special_legendre_polynomial_p, "legendre_polynomial_p")
#undef MPS_OPS_POLYNOMIAL_STUBS

}  // namespace mps_ops
