// Host stubs of linalg_ldl_factor_ex and linalg_ldl_solve (functional and
// out=): the Bunch-Kaufman LDL^T factorization of symmetric matrices and the
// solve with it, in LAPACK's storage and pivot convention, as the CPU's;
// kernels in csrc/kernels/ldl.metal. Checks, their order and messages are
// the CPU's. float32 only (the CPU's LAPACK also takes float64 and complex).
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/error_checks.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include "../kernels/ldl_params.h"

#include <ATen/ExpandUtils.h>
#include <ATen/ops/empty.h>
#include <torch/version.h>

#include <tuple>

namespace mps_ops {

namespace {

constexpr const char* factor_name = "torch.linalg.ldl_factor_ex";
constexpr const char* solve_name = "torch.linalg.ldl_solve";

void check_square_floating(const at::Tensor& a, const char* name) {
  check_square_matrices(a, name);
  check_floating_or_complex(a, name);
}

// The CPU's structured out=: an out it resizes takes the result's
// column-major strides (LAPACK's layout) rather than contiguous ones.
void check_column_major_output(const char* op, at::Tensor& out, const at::Tensor& result,
                               std::initializer_list<const at::Tensor*> inputs) {
  const bool resized = !out.sizes().equals(result.sizes());
  check_output(op, out, result.scalar_type(), result.sizes(), inputs);
  if (resized) {
    out.as_strided_(result.sizes(), result.strides());
    // Restrided, out covers its memory in another order: checked again.
    check_no_aliasing(out, inputs);
  }
}

// LD, pivots and info, computed into fresh tensors.
std::tuple<at::Tensor, at::Tensor, at::Tensor> factor(const at::Tensor& self, bool check_errors) {
  static KernelCache kernels("ldl_factor");
  const int64_t n = self.size(-1);
  at::Tensor ld = batched_column_major_copy(self);
  const auto batch = self.sizes().slice(0, self.dim() - 2);
  at::Tensor pivots = at::empty(self.sizes().slice(0, self.dim() - 1), self.options().dtype(at::kInt));
  at::Tensor info = at::empty(batch, self.options().dtype(at::kInt));
  const int64_t matrices = info.numel();
  if (matrices == 0) {
    return {ld, pivots, info};
  }
  const KernelHandle* handle = kernels.get(Variant::dense, at::kFloat, at::kFloat);
  const uint32_t threads = power_of_two_group(n, ldl_factor_max_threads, handle);
  // The kernel indexes a matrix's elements in 32-bit ints (j * n + i).
  TORCH_CHECK(n * n <= INT32_MAX && matrices * threads <= UINT32_MAX,
              "mps_ops: linalg_ldl_factor_ex of matrices of 2**31 elements or more (46341 rows), or of too many "
              "matrices");
  KernelFunction kernel(handle);
  const ldl_factor_params params{static_cast<int>(n)};
  kernel.bind_operands(ld, pivots, info).bind(params);
  kernel.dispatch(Dim3{threads * static_cast<uint32_t>(matrices), 1, 1}, Dim3{threads, 1, 1});
  if (check_errors) {
    // The CPU reports a zero pivot through torch's generic check, as an
    // "unknown error code" RuntimeError: ours says what it is.
    // Read through a pointer: a tensor index per matrix costs microseconds each.
    const at::Tensor codes = info.reshape({-1}).to(at::kCPU).contiguous();
    const int* code_of = codes.const_data_ptr<int>();
    for (int64_t m = 0; m < matrices; ++m) {
      const int code = code_of[m];
      TORCH_CHECK(code == 0, factor_name, ": ", matrices > 1 ? "(Batch element " + std::to_string(m) + "): " : "",
                  "The factorization could not be completed because the input is singular: D[", code - 1, ", ",
                  code - 1, "] is zero.");
    }
  }
  return {ld, pivots, info};
}

at::Tensor solve(const at::Tensor& ld, const at::Tensor& pivots, const at::Tensor& b) {
  static KernelCache kernels("ldl_solve");
  const int64_t n = ld.size(-1);
  const int64_t columns = b.size(-1);
  // The result's batch is B's and LD's broadcast, as the CPU's.
  auto batch = at::infer_size(b.sizes().slice(0, b.dim() - 2), ld.sizes().slice(0, ld.dim() - 2));
  std::vector<int64_t> result_shape(batch.begin(), batch.end());
  result_shape.push_back(n);
  result_shape.push_back(columns);
  at::Tensor result = batched_column_major_copy(b.expand(result_shape));
  if (result.numel() == 0) {
    return result;
  }
  const int64_t matrices = result.numel() / (n * columns);
  TORCH_CHECK(n <= INT32_MAX && columns <= INT32_MAX && matrices <= UINT32_MAX,
              "mps_ops: linalg_ldl_solve of 2**31 rows or right-hand sides or more, or of too many matrices");
  std::vector<int64_t> ld_shape(batch.begin(), batch.end());
  ld_shape.push_back(n);
  ld_shape.push_back(n);
  std::vector<int64_t> pivots_shape(batch.begin(), batch.end());
  pivots_shape.push_back(n);
  // Views where the broadcast allows (one LD for every batch: stride 0).
  const at::Tensor ld_batches = ld.expand(ld_shape).reshape({matrices, n, n});
  const at::Tensor pivot_batches = pivots.to(at::kLong).expand(pivots_shape).reshape({matrices, n});
  KernelFlag too_large, too_small, unpaired;
  ldl_solve_params params{};
  params.n = static_cast<int>(n);
  params.columns = static_cast<int>(columns);
  params.ld_batch_stride = ld_batches.stride(0);
  params.ld_row_stride = ld_batches.stride(1);
  params.ld_column_stride = ld_batches.stride(2);
  params.pivots_batch_stride = pivot_batches.stride(0);
  params.pivots_stride = pivot_batches.stride(1);
  KernelFunction kernel(kernels.get(Variant::dense, at::kFloat, at::kFloat));
  kernel.bind_operands(result, too_large, too_small, unpaired, ld_batches, pivot_batches)
      .bind(params);
  kernel.dispatch(Dim3{static_cast<uint32_t>(columns), static_cast<uint32_t>(matrices), 1});
  std::vector<KernelFlag> flags;
  flags.push_back(std::move(too_large));
  flags.push_back(std::move(too_small));
  flags.push_back(std::move(unpaired));
  check_flags("linalg_ldl_solve", std::move(flags), [](const std::vector<KernelFlag>& pivot_flags) {
    // Each read before any check raises: a flag left unread by the exception
    // would be retired (KernelFlag's destructor), not given back to the pool.
    const bool pivot_too_large = pivot_flags[0].raised(), pivot_too_small = pivot_flags[1].raised(),
               pivot_unpaired = pivot_flags[2].raised();
    TORCH_CHECK(!pivot_too_large,
                "Pivots given to ldl_solve must all satisfy |pivot| <= LD.size(-2). Did you properly pass the "
                "result of ldl_factor?");
    TORCH_CHECK(!pivot_too_small,
                "Pivots given to ldl_solve must all satisfy |pivot| >= 1. Did you properly pass the result of "
                "ldl_factor?");
    // The CPU does not check this (it reads and writes outside the matrix).
    TORCH_CHECK(!pivot_unpaired,
                "mps_ops: pivots given to ldl_solve must give each 2x2 block the same negative pivot twice, as "
                "ldl_factor does. Did you properly pass the result of ldl_factor?");
  });
  return result;
}

void check_solve_operands(const at::Tensor& ld, const at::Tensor& pivots, const at::Tensor& b) {
  check_devices(solve_name, {&ld, &pivots, &b});
  check_square_floating(ld, solve_name);
  // torch's linearSolveCheckInputs(B, LD).
  TORCH_CHECK(b.scalar_type() == ld.scalar_type(), "Expected b and A to have the same dtype, but found b of type ",
              b.scalar_type(), " and A of type ", ld.scalar_type(), " instead.");
  TORCH_CHECK(ld.size(-1) == b.size(-2), "Incompatible matrix sizes for ", solve_name, ": each A matrix is ",
              ld.size(-1), " by ", ld.size(-1), " but each b matrix is ", b.size(-2), " by ", b.size(-1));
  TORCH_CHECK(b.dim() >= 2, solve_name, ": Expected B to have at least 2 dimensions, but it has ", b.dim(),
              " dimensions instead");
  const auto expected_pivots_shape = ld.sizes().slice(0, ld.dim() - 1);
  TORCH_CHECK(expected_pivots_shape.equals(pivots.sizes()), solve_name,
              ": Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with shape ", pivots.sizes(),
              " instead");
  TORCH_CHECK(at::isIntegralType(pivots.scalar_type(), /*includeBool=*/false), solve_name,
              ": Expected pivots to be integers. Got ", pivots.scalar_type());
  // B's and LD's batches must broadcast (infer_size's error otherwise).
  at::infer_size(b.sizes().slice(0, b.dim() - 2), ld.sizes().slice(0, ld.dim() - 2));
}

// From torch 2.12 the CPU checks the pivots' values with abs(), which has no
// unsigned kernel wider than uint8: its NotImplementedError for those.
// Before, it takes them (and ours, which checks every release's pivots in
// its kernel, does too).
void check_pivots_dtype(const at::Tensor& pivots) {
#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 12
  (void)pivots;
#else
  const auto dtype = pivots.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(!is_wide_unsigned(dtype),
                              "mps_ops: linalg_ldl_solve not implemented for pivots of dtype '", dtype, "' on ",
                              pivots.device(), " (the CPU checks them with abs, which has no kernel for it)");
#endif
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> linalg_ldl_factor_ex(const at::Tensor& self, bool hermitian,
                                                                    bool check_errors) {
  check_device(factor_name, self);
  check_square_floating(self, factor_name);
  check_float32_only("linalg_ldl_factor_ex", self);
  return factor(self, check_errors);
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> linalg_ldl_factor_ex_out(const at::Tensor& self, bool hermitian,
                                                                           bool check_errors, at::Tensor& LD,
                                                                           at::Tensor& pivots, at::Tensor& info) {
  check_device(factor_name, self);
  check_square_floating(self, factor_name);
  check_out_dtype_first(self.scalar_type(), LD);
  check_out_dtype_first(at::kInt, pivots);
  check_out_dtype_first(at::kInt, info);
  check_float32_only("linalg_ldl_factor_ex", self);
  const auto [ld_result, pivots_result, info_result] = factor(self, check_errors);
  check_column_major_output("linalg_ldl_factor_ex", LD, ld_result, {&self});
  check_output("linalg_ldl_factor_ex", pivots, at::kInt, pivots_result.sizes(), {&self, &LD});
  check_output("linalg_ldl_factor_ex", info, at::kInt, info_result.sizes(), {&self, &LD, &pivots});
  LD.copy_(ld_result);
  pivots.copy_(pivots_result);
  info.copy_(info_result);
  return {LD, pivots, info};
}

at::Tensor linalg_ldl_solve(const at::Tensor& LD, const at::Tensor& pivots, const at::Tensor& B, bool hermitian) {
  check_solve_operands(LD, pivots, B);
  check_pivots_dtype(pivots);
  check_float32_only("linalg_ldl_solve", LD);
  return solve(LD, pivots, B);
}

at::Tensor& linalg_ldl_solve_out(const at::Tensor& LD, const at::Tensor& pivots, const at::Tensor& B,
                                 bool hermitian, at::Tensor& out) {
  check_solve_operands(LD, pivots, B);
  check_out_dtype_first(LD.scalar_type(), out);
  check_pivots_dtype(pivots);
  check_float32_only("linalg_ldl_solve", LD);
  const at::Tensor result = solve(LD, pivots, B);
  check_column_major_output("linalg_ldl_solve", out, result, {&LD, &pivots, &B});
  out.copy_(result);
  return out;
}

}  // namespace mps_ops
