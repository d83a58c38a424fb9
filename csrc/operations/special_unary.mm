// Host stubs of torch.special.ndtri, log_ndtr and airy_ai: integer inputs
// compute in float; kernels in csrc/kernels/special_unary.metal.
#include "elementwise_stubs.h"

namespace mps_ops {

#define MPS_OPS_UNARY_FLOAT_STUBS(ATEN_NAME, KERNEL_OP)                                   \
  at::Tensor& ATEN_NAME##_out(const at::Tensor& self, at::Tensor& out) {                  \
    static KernelCache kernels(KERNEL_OP);                                                \
    return unary_float_out(kernels, #ATEN_NAME, self, out);                               \
  }                                                                                       \
  at::Tensor ATEN_NAME(const at::Tensor& self) {                                          \
    static KernelCache kernels(KERNEL_OP);                                                \
    return unary_float(kernels, #ATEN_NAME, self);                                        \
  }

MPS_OPS_UNARY_FLOAT_STUBS(special_ndtri, "ndtri")
MPS_OPS_UNARY_FLOAT_STUBS(special_log_ndtr, "log_ndtr")
MPS_OPS_UNARY_FLOAT_STUBS(special_airy_ai, "airy_ai")
#undef MPS_OPS_UNARY_FLOAT_STUBS

}  // namespace mps_ops
