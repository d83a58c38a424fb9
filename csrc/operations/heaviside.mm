// Host stubs of torch.heaviside (functional, out=, in-place); kernels in
// csrc/kernels/heaviside.metal.
#include "../runtime/elementwise_stubs.h"

namespace mps_ops {

namespace {

KernelCache& heaviside_kernels() {
  static KernelCache kernels("heaviside");
  return kernels;
}

// The CPU's own restrictions, with its words.
// An out= must have self's dtype too.
void check_heaviside_inputs(const at::Tensor& self, const at::Tensor& values, const at::Tensor* out = nullptr) {
  TORCH_CHECK(!self.is_complex() && !values.is_complex(),
              "heaviside is not yet implemented for complex tensors.");
  TORCH_CHECK(self.scalar_type() == values.scalar_type() && (out == nullptr || out->scalar_type() == self.scalar_type()),
              "heaviside is not yet implemented for tensors with different dtypes.");
}

}  // namespace

at::Tensor& heaviside_out(const at::Tensor& self, const at::Tensor& values, at::Tensor& out) {
  check_heaviside_inputs(self, values, &out);
  return binary_out(heaviside_kernels(), "heaviside", same_dtype, self, values, out);
}

at::Tensor heaviside(const at::Tensor& self, const at::Tensor& values) {
  check_heaviside_inputs(self, values);
  return binary(heaviside_kernels(), "heaviside", same_dtype, self, values);
}

at::Tensor& heaviside_(at::Tensor& self, const at::Tensor& values) {
  check_heaviside_inputs(self, values);
  return binary_inplace(heaviside_kernels(), "heaviside_", same_dtype, self, values);
}

}  // namespace mps_ops
