// Host stubs of aten::_add_relu (Tensor and Scalar overloads, out=, in-place):
// relu(self + alpha * other); kernels in csrc/kernels/add_relu.metal.
#include "elementwise_stubs.h"

#include "../kernels/include/mps_ops/params.h"

#include <ATen/ScalarOps.h>

namespace mps_ops {

namespace {

KernelCache& add_relu_kernels() {
  static KernelCache kernels("add_relu");
  return kernels;
}

// The CPU kernel's dtypes and its error (an internal assert there:
// RuntimeError). In place it dispatches on self's dtype, so self must be one
// of them too (an out= of another dtype receives a cast).
void check_add_relu_dtype(const at::Tensor& self, const at::Tensor& other, const at::Tensor* written = nullptr) {
  for (const auto dtype : {at::result_type(self, other), written ? written->scalar_type() : at::kFloat}) {
    const bool supported = dtype == at::kChar || dtype == at::kShort || dtype == at::kInt ||
                           dtype == at::kLong || dtype == at::kFloat || dtype == at::kDouble;
    TORCH_CHECK(supported, "Unsupported datatype for add_relu:", c10::toString(dtype));
  }
}

add_relu_params params_of(const at::Scalar& alpha) {
  return add_relu_params{static_cast<float>(alpha.to<double>()), alpha.to<int64_t>()};
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
  const auto p = params_of(alpha);
  return binary_out(add_relu_kernels(), "_add_relu", same_dtype, self, other, out, {&p, sizeof(p)});
}

at::Tensor _add_relu(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  check_add_relu_dtype(self, other);
  const auto p = params_of(alpha);
  return binary(add_relu_kernels(), "_add_relu", same_dtype, self, other, {&p, sizeof(p)});
}

at::Tensor& _add_relu_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  check_add_relu_dtype(self, other, &self);
  const auto p = params_of(alpha);
  return binary_inplace(add_relu_kernels(), "_add_relu_", same_dtype, self, other, {&p, sizeof(p)});
}

at::Tensor _add_relu_scalar(const at::Tensor& self, const at::Scalar& other, const at::Scalar& alpha) {
  return mps_ops::_add_relu(self, wrapped(other), alpha);
}

at::Tensor& _add_relu__scalar(at::Tensor& self, const at::Scalar& other, const at::Scalar& alpha) {
  return mps_ops::_add_relu_(self, wrapped(other), alpha);
}

}  // namespace mps_ops
