// Host stub of logit_ (in place; torch's MPS backend has the functional
// form). Kernel in csrc/kernels/logit.metal.
#include "../runtime/elementwise.h"
#include "../runtime/op_checks.h"

#include "../kernels/logit_params.h"

namespace mps_ops {

at::Tensor& logit_(at::Tensor& self, std::optional<double> eps) {
  static KernelCache kernels("logit");
  check_inplace("logit_", self);
  // The CPU's in-place rule: a float result cannot go into an integer self.
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "result type Float can't be cast to the ",
              "desired output type ", self.scalar_type());
  const logit_params params{eps ? static_cast<float>(*eps) : -1.0f};
  auto iter = elementwise_config(/*output_from_caller=*/true).add_output(self).add_const_input(self).build();
  exec_elementwise(kernels, iter, self.scalar_type(), params);
  return self;
}

}  // namespace mps_ops
