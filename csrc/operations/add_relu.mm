// Host stubs of aten::_add_relu (Tensor and Scalar overloads, out=, in-place):
// relu(self + alpha * other); kernels in csrc/kernels/add_relu.metal.
#include "../runtime/elementwise_stubs.h"

#include "../kernels/add_relu_params.h"

#include <ATen/Dispatch.h>
#include <ATen/ScalarOps.h>

#include <limits>

namespace mps_ops {

namespace {

KernelCache& add_relu_kernels() {
  static KernelCache kernels("add_relu");
  return kernels;
}

// The CPU picks the clamp from self's dtype (an internal assert for any
// other: RuntimeError), then computes in the common dtype, where complex has
// no kernel (NotImplementedError).
bool has_add_relu_kernel(c10::ScalarType dtype) {
  return dtype == at::kChar || dtype == at::kShort || dtype == at::kInt || dtype == at::kLong ||
         dtype == at::kFloat || dtype == at::kDouble;
}

void check_add_relu_dtype(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(has_add_relu_kernel(self.scalar_type()), "Unsupported datatype for add_relu:",
              c10::toString(self.scalar_type()));
  check_dtype("_add_relu", self);
  check_dtype("_add_relu", other);
  const auto common = at::result_type(self, other);
  TORCH_CHECK_NOT_IMPLEMENTED(has_add_relu_kernel(common), "\"_add_relu\" not implemented for '",
                              c10::toString(common), "' on ", self.device());
}

// alpha and the upper clamp converted to the computing dtype as the CPU
// converts them (an alpha that overflows that dtype raises RuntimeError).
add_relu_params params_of(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  const auto common = at::result_type(self, other);
  at::Scalar upper;
  AT_DISPATCH_ALL_TYPES(self.scalar_type(), "_add_relu", [&] {
    upper = at::Scalar(std::numeric_limits<scalar_t>::max());
  });
  add_relu_params p{};
  if (c10::isIntegralType(common, /*includeBool=*/false)) {
    AT_DISPATCH_INTEGRAL_TYPES(common, "_add_relu", [&] {
      p.integer_alpha = alpha.to<scalar_t>();
      p.integer_upper = upper.to<scalar_t>();
    });
  } else {
    p.alpha = alpha.to<float>();
    p.upper = upper.to<float>();
  }
  return p;
}

// A Python number operand, as the CPU's Scalar overload wraps it.
at::Tensor wrapped(const at::Scalar& value) {
  at::Tensor t = c10::scalar_to_tensor(value);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

}  // namespace

at::Tensor& _add_relu_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha,
                          at::Tensor& out) {
  check_add_relu_dtype(self, other);
  const auto p = params_of(self, other, alpha);
  return binary_out(add_relu_kernels(), "_add_relu", same_dtype, self, other, out, p);
}

at::Tensor _add_relu(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  check_add_relu_dtype(self, other);
  const auto p = params_of(self, other, alpha);
  return binary(add_relu_kernels(), "_add_relu", same_dtype, self, other, p);
}

at::Tensor& _add_relu_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  check_add_relu_dtype(self, other);
  const auto p = params_of(self, other, alpha);
  return binary_inplace(add_relu_kernels(), "_add_relu_", same_dtype, self, other, p);
}

at::Tensor _add_relu_scalar(const at::Tensor& self, const at::Scalar& other, const at::Scalar& alpha) {
  return mps_ops::_add_relu(self, wrapped(other), alpha);
}

at::Tensor& _add_relu__scalar(at::Tensor& self, const at::Scalar& other, const at::Scalar& alpha) {
  return mps_ops::_add_relu_(self, wrapped(other), alpha);
}

}  // namespace mps_ops
