// Host stubs of _addmm_activation (functional and out=): relu or gelu of
// beta * self + alpha * (mat1 @ mat2). The product is torch's own mm on the
// device (a matrix multiply is no gap of MPS); the rest is one pass of
// csrc/kernels/addmm_activation.metal. Checks, their order and messages are
// the CPU's (addmm's, then gelu's dtype refusal).
#include "../runtime/elementwise_stubs.h"

#include "../kernels/addmm_activation_params.h"

#include <ATen/Dispatch.h>
#include <ATen/ops/mm.h>

namespace mps_ops {

namespace {

constexpr const char* op_name = "_addmm_activation";

KernelCache& addmm_activation_kernels() {
  static KernelCache kernels("addmm_activation");
  return kernels;
}

// addmm's checks: dtypes, then shapes.
void check_addmm_operands(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2) {
  check_devices(op_name, {&self, &mat1, &mat2});
  TORCH_CHECK(self.scalar_type() == mat2.scalar_type(), "self and mat2 must have the same dtype, but got ",
              self.scalar_type(), " and ", mat2.scalar_type());
  TORCH_CHECK(mat1.scalar_type() == mat2.scalar_type(), "mat1 and mat2 must have the same dtype, but got ",
              mat1.scalar_type(), " and ", mat2.scalar_type());
  TORCH_CHECK(mat1.dim() == 2, "mat1 must be a matrix, got ", mat1.dim(), "-D tensor");
  TORCH_CHECK(mat2.dim() == 2, "mat2 must be a matrix, got ", mat2.dim(), "-D tensor");
  TORCH_CHECK(mat1.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (", mat1.size(0), "x",
              mat1.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
}

// The dtype rules, after the out's: the CPU's addmm has no bool kernel (nor
// float8) and its gelu_ no integer one.
void check_dtypes(const at::Tensor& mat1, bool use_gelu) {
  check_dtype(op_name, mat1);
  const auto dtype = mat1.scalar_type();
  const bool has_kernel = c10::isIntegralType(dtype, /*includeBool=*/false) || dtype == at::kFloat ||
                          dtype == at::kHalf || dtype == at::kBFloat16;
  TORCH_CHECK_NOT_IMPLEMENTED(has_kernel, "mps_ops: ", op_name, " not implemented for '", dtype, "' on ",
                              mat1.device());
  TORCH_CHECK_NOT_IMPLEMENTED(!use_gelu || at::isFloatingType(dtype), "mps_ops: ", op_name,
                              " with use_gelu not implemented for '", dtype, "' on ", mat1.device(),
                              " (the CPU's gelu has no integer kernel)");
}

addmm_activation_params params_of(c10::ScalarType dtype, const at::Scalar& beta, const at::Scalar& alpha,
                                  bool use_gelu) {
  addmm_activation_params p{};
  p.use_gelu = use_gelu;
  if (c10::isIntegralType(dtype, /*includeBool=*/false)) {
    AT_DISPATCH_INTEGRAL_TYPES(dtype, op_name, [&] {
      p.integer_beta = beta.to<scalar_t>();
      p.integer_alpha = alpha.to<scalar_t>();
    });
  } else {
    p.beta = beta.to<float>();
    p.alpha = alpha.to<float>();
  }
  return p;
}

// self broadcast to the product's shape (expand's own error where it does
// not fit, as the CPU's), the coefficients, and the product itself. Half and
// bfloat16 multiply in float and the epilogue rounds once, as the CPU's
// addmm does: a product rounded to half before beta * self is added loses
// what cancellation leaves (several half ulps of the result). The
// conversions cost O(n**2) beside the multiply's O(n**3).
struct EpilogueOperands {
  at::Tensor self;
  at::Tensor product;
  addmm_activation_params params;
};

EpilogueOperands epilogue_operands(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                                   const at::Scalar& beta, const at::Scalar& alpha, bool use_gelu) {
  const auto params = params_of(mat1.scalar_type(), beta, alpha, use_gelu);
  const bool in_float = at::isReducedFloatingType(mat1.scalar_type());
  at::Tensor expanded = self.expand({mat1.size(0), mat2.size(1)});
  if (!in_float) {
    return {std::move(expanded), at::mm(mat1, mat2), params};
  }
  return {expanded.to(at::kFloat), at::mm(mat1.to(at::kFloat), mat2.to(at::kFloat)), params};
}

}  // namespace

at::Tensor _addmm_activation(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                             const at::Scalar& beta, const at::Scalar& alpha, bool use_gelu) {
  check_addmm_operands(self, mat1, mat2);
  check_dtypes(mat1, use_gelu);
  const auto operands = epilogue_operands(self, mat1, mat2, beta, alpha, use_gelu);
  // In float for half and bfloat16: rounded to mat1's dtype on the way out.
  return binary(addmm_activation_kernels(), op_name, same_dtype, operands.self, operands.product,
                operands.params)
      .to(mat1.scalar_type());
}

at::Tensor& _addmm_activation_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                                  const at::Scalar& beta, const at::Scalar& alpha, bool use_gelu,
                                  at::Tensor& out) {
  check_addmm_operands(self, mat1, mat2);
  check_out_dtype_first(mat1.scalar_type(), out, OutputDtype::exact);
  check_dtypes(mat1, use_gelu);
  const auto operands = epilogue_operands(self, mat1, mat2, beta, alpha, use_gelu);
  return binary_out(addmm_activation_kernels(), op_name, same_dtype, operands.self, operands.product, out,
                    operands.params);
}

}  // namespace mps_ops
