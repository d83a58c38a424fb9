// Host stub of torch.frexp (frexp.Tensor is composite and calls this):
// mantissa in self's dtype, exponent int32; kernels in csrc/kernels/frexp.metal.
#include "../runtime/elementwise_stubs.h"

namespace mps_ops {

std::tuple<at::Tensor&, at::Tensor&> frexp_out(const at::Tensor& self, at::Tensor& mantissa,
                                                at::Tensor& exponent) {
  static KernelCache kernels("frexp");
  check_device("frexp", self);
  // The CPU's checks and messages (complex is not floating-point here).
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "torch.frexp() only supports floating-point dtypes");
  check_dtype("frexp", self);
  TORCH_CHECK(mantissa.dtype() == self.dtype(), "torch.frexp() expects mantissa to have dtype ",
              self.dtype(), " but got ", mantissa.dtype());
  TORCH_CHECK(exponent.dtype() == at::kInt,
              "torch.frexp() expects exponent to have int dtype but got ", exponent.dtype());
  // One iterator over both outputs: one that is not resized takes part in
  // laying out the other.
  const bool mantissa_resized = mantissa.sizes() != self.sizes();
  const bool exponent_resized = exponent.sizes() != self.sizes();
  check_elementwise_output("frexp", mantissa, self.scalar_type(), self.sizes(),
                           exponent_resized ? std::vector<const at::Tensor*>{&self}
                                            : std::vector<const at::Tensor*>{&exponent, &self},
                           OutputDtype::exact);
  check_elementwise_output("frexp", exponent, at::kInt, self.sizes(),
                           mantissa_resized ? std::vector<const at::Tensor*>{&self}
                                            : std::vector<const at::Tensor*>{&mantissa, &self},
                           OutputDtype::exact);
  auto iter = elementwise_config(/*output_from_caller=*/true).add_output(mantissa).add_output(exponent).add_const_input(self).build();
  exec_elementwise(kernels, iter, self.scalar_type());
  return std::forward_as_tuple(mantissa, exponent);
}

}  // namespace mps_ops
