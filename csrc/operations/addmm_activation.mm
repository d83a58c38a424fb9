// Host stubs of _addmm_activation (functional and out=): relu or gelu of
// beta * self + alpha * (mat1 @ mat2). For floats the product is torch's own
// mm on the device (a matrix multiply is no gap of MPS) and the rest one pass
// of csrc/kernels/addmm_activation.metal; integers run one kernel of ours. Checks, their order and messages are
// the CPU's (addmm's, then gelu's dtype refusal).
#include "../runtime/elementwise_stubs.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"

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

// The float path: self (broadcast by the pass), and the product. Half and
// bfloat16 multiply in float and the epilogue rounds once, as the CPU's
// addmm does: a product rounded to half before beta * self is added loses
// what cancellation leaves (several half ulps of the result). The
// conversions cost O(n**2) beside the multiply's O(n**3). The result is in
// float for them, rounded to mat1's dtype by the caller.
at::Tensor floating_result(const at::Tensor& bias, const at::Tensor& mat1, const at::Tensor& mat2,
                           const at::Scalar& beta, const at::Scalar& alpha, bool use_gelu) {
  addmm_activation_params p{};
  p.beta = beta.to<float>();
  p.alpha = alpha.to<float>();
  p.use_gelu = use_gelu;
  const bool in_float = at::isReducedFloatingType(mat1.scalar_type());
  const at::Tensor product = in_float ? at::mm(mat1.to(at::kFloat), mat2.to(at::kFloat)) : at::mm(mat1, mat2);
  return binary(addmm_activation_kernels(), op_name, same_dtype, in_float ? bias.to(at::kFloat) : bias, product,
                p);
}

// The integer path: the whole op in one kernel (torch's mm has no integer
// kernel on some GPU backends), beta and alpha converted as the CPU converts
// them (truncated; one that overflows the dtype raises its RuntimeError).
at::Tensor integer_result(const at::Tensor& bias, const at::Tensor& mat1, const at::Tensor& mat2,
                          const at::Scalar& beta, const at::Scalar& alpha) {
  const int64_t rows = mat1.size(0), columns = mat2.size(1);
  at::Tensor result = at::empty({rows, columns}, mat1.options());
  if (result.numel() == 0) {
    return result;
  }
  TORCH_CHECK(rows <= UINT32_MAX && columns <= UINT32_MAX,
              "mps_ops: _addmm_activation of integer matrices with 2**32 rows or columns or more");
  const at::Tensor self = bias.expand({rows, columns});
  addmm_integer_params p{};
  AT_DISPATCH_INTEGRAL_TYPES(mat1.scalar_type(), op_name, [&] {
    p.beta = beta.to<scalar_t>();
    p.alpha = alpha.to<scalar_t>();
  });
  p.inner = mat1.size(1);
  p.columns = columns;
  p.self_row_stride = self.stride(0);
  p.self_column_stride = self.stride(1);
  p.mat1_row_stride = mat1.stride(0);
  p.mat1_column_stride = mat1.stride(1);
  p.mat2_row_stride = mat2.stride(0);
  p.mat2_column_stride = mat2.stride(1);
  KernelFunction kernel(addmm_activation_kernels().get(Variant::dense, mat1.scalar_type(), mat1.scalar_type()));
  kernel.bind_operands(result, self, mat1, mat2).bind(p);
  kernel.dispatch(Dim3{static_cast<uint32_t>(columns), static_cast<uint32_t>(rows), 1});
  return result;
}

// The op's result as a fresh (rows, columns) tensor of mat1's dtype.
at::Tensor compute(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                   const at::Scalar& alpha, bool use_gelu) {
  // expand's own error where self does not fit, as the CPU's.
  (void)self.expand({mat1.size(0), mat2.size(1)});
  // A 0-dim self, on the CPU or not, becomes one element on the matrices'
  // device: the kernels take device operands only, none bound as a value.
  const at::Tensor bias = self.dim() == 0 ? self.reshape({1}).to(mat1.device()) : self;
  if (c10::isIntegralType(mat1.scalar_type(), /*includeBool=*/false)) {
    return integer_result(bias, mat1, mat2, beta, alpha);
  }
  return floating_result(bias, mat1, mat2, beta, alpha, use_gelu).to(mat1.scalar_type());
}

}  // namespace

at::Tensor _addmm_activation(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                             const at::Scalar& beta, const at::Scalar& alpha, bool use_gelu) {
  check_addmm_operands(self, mat1, mat2);
  check_dtypes(mat1, use_gelu);
  return compute(self, mat1, mat2, beta, alpha, use_gelu);
}

at::Tensor& _addmm_activation_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                                  const at::Scalar& beta, const at::Scalar& alpha, bool use_gelu,
                                  at::Tensor& out) {
  check_addmm_operands(self, mat1, mat2);
  check_out_dtype_first(mat1.scalar_type(), out, OutputDtype::exact);
  check_dtypes(mat1, use_gelu);
  const at::Tensor result = compute(self, mat1, mat2, beta, alpha, use_gelu);
  check_output(op_name, out, mat1.scalar_type(), result.sizes());
  out.copy_(result);
  return out;
}

}  // namespace mps_ops
