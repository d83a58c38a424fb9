// Host stubs of _cholesky_solve_helper, the kernel under torch.cholesky_solve
// (which checks and broadcasts its operands first): a `fill` for torch 2.9
// to 2.11 (Gaussian-process libraries solve with Cholesky factors on every
// step), and of cholesky_inverse (+ out=; a fill for 2.9 and 2.10), the same
// solve of the identity. Kernels in csrc/kernels/cholesky_solve.metal. The
// results are batched column-major, the CPU's layout (B's copy solved in
// place; the identity's).
// The CPU's helper checks nothing (LAPACK's potrs reads and writes outside
// its operands for B and A of different batches); ours raises for operands
// that are not batches of n x n factors and n-row right-hand sides of the
// same batches and dtype.
#include "../runtime/contiguous_output.h"
#include "../runtime/error_checks.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include "../kernels/cholesky_solve_params.h"
#include "../runtime/kernel_flag.h"

#include <ATen/ops/diagonal.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/tril.h>

#include <string>


namespace mps_ops {

namespace {

constexpr const char* cholesky_solve_name = "cholesky_solve";

void check_cholesky_solve_operands(const at::Tensor& b, const at::Tensor& factor) {
  check_devices(cholesky_solve_name, {&b, &factor});
  check_float32_only(cholesky_solve_name, b);
  TORCH_CHECK(factor.scalar_type() == b.scalar_type(), "mps_ops: _cholesky_solve_helper on ", b.device(),
              ": B of dtype ", b.scalar_type(), " and A of dtype ", factor.scalar_type());
  TORCH_CHECK(b.dim() >= 2 && factor.dim() >= 2 && factor.size(-1) == factor.size(-2) &&
                  factor.size(-1) == b.size(-2) &&
                  factor.sizes().slice(0, factor.dim() - 2).equals(b.sizes().slice(0, b.dim() - 2)),
              "mps_ops: _cholesky_solve_helper on ", b.device(), ": expected A of n x n matrices and B of n-row ",
              "matrices of the same batches (torch.cholesky_solve broadcasts them), but got A of shape ",
              factor.sizes(), " and B of shape ", b.sizes());
}

// The parameters of a solve of `result` (a batched column-major copy of the
// right-hand sides, of `matrices` batches) with `factors`, one n x n factor
// per batch.
cholesky_solve_params solve_params(const char* op, const at::Tensor& result, const at::Tensor& factors,
                                   bool upper) {
  const int64_t n = factors.size(-1), columns = result.size(-1), matrices = factors.size(0);
  TORCH_CHECK(n <= INT32_MAX && columns <= INT32_MAX && matrices <= UINT32_MAX, "mps_ops: ", op, " on ",
              result.device(), " of 2**31 rows or right-hand sides or more, or of too many matrices");
  cholesky_solve_params p{};
  p.n = static_cast<int>(n);
  p.columns = static_cast<int>(columns);
  p.batch_stride = factors.stride(0);
  p.along_rows = upper ? factors.stride(2) : factors.stride(1);
  p.along_columns = upper ? factors.stride(1) : factors.stride(2);
  return p;
}

Dim3 solve_grid(const cholesky_solve_params& p, const at::Tensor& factors) {
  return Dim3{static_cast<uint32_t>(p.columns), static_cast<uint32_t>(factors.size(0)), 1};
}

constexpr const char* cholesky_inverse_name = "cholesky_inverse";

// The inverse of self's F F^T, a batched column-major tensor as the CPU's;
// self checked.
at::Tensor inverse_from_factor(const at::Tensor& self, bool upper) {
  static KernelCache kernels("cholesky_inverse");
  const int64_t n = self.size(-1);
  at::Tensor inverse = batched_column_major_copy(at::eye(n, self.options()).expand(self.sizes()));
  if (inverse.numel() == 0) {
    return inverse;
  }
  const at::Tensor factors = self.reshape({-1, n, n});
  const cholesky_solve_params p = solve_params(cholesky_inverse_name, inverse, factors, upper);
  KernelFlag zero_diagonal;
  KernelFunction kernel(kernels.get(Variant::dense, at::kFloat, at::kFloat));
  kernel.bind_operands(inverse, zero_diagonal, factors).bind(p);
  kernel.dispatch(solve_grid(p, factors));
  // Exactly symmetric, as the CPU's (it mirrors one triangle): the lower
  // triangle mirrored, in the column-major copy's layout.
  inverse.copy_(at::tril(inverse).add_(at::tril(inverse, -1).mT()));
  const bool batched = self.dim() > 2;
  check_flag(cholesky_inverse_name, std::move(zero_diagonal), [factors, batched](const KernelFlag& flag) {
    if (!flag.raised()) {
      return;
    }
    // The first zero, in the CPU's words (1-based; the batch named where
    // the input has batch dims, even one of size 1).
    const at::Tensor zeros = at::diagonal(factors, 0, -2, -1).eq(0).flatten().nonzero().cpu();
    const int64_t first = zeros[0][0].item<int64_t>(), n = factors.size(-1);
    const std::string batch =
        batched ? "(Batch element " + std::to_string(first / n) + "): " : std::string();
    TORCH_CHECK_LINALG(false, "cholesky_inverse: ", batch, "The diagonal element ", first % n + 1,
                       " is zero, the inversion could not be completed because the input matrix is singular.");
  });
  return inverse;
}

}  // namespace

at::Tensor _cholesky_solve_helper(const at::Tensor& self, const at::Tensor& A, bool upper) {
  static KernelCache kernels("cholesky_solve");
  check_cholesky_solve_operands(self, A);
  at::Tensor result = batched_column_major_copy(self);
  if (result.numel() == 0) {
    return result;
  }
  const int64_t n = A.size(-1);
  // A view where the layout allows (one factor expanded over every batch:
  // stride 0).
  const at::Tensor factors = A.reshape({-1, n, n});
  const cholesky_solve_params p = solve_params("_cholesky_solve_helper", result, factors, upper);
  KernelFunction kernel(kernels.get(Variant::dense, at::kFloat, at::kFloat));
  kernel.bind_operands(result, factors).bind(p);
  kernel.dispatch(solve_grid(p, factors));
  return result;
}

// The CPU's order: the input's shape, out's device and dtype (any the
// result casts to), then the input's dtype (its kernel's dispatch). An
// empty out of the result's dtype takes the result's batched column-major
// strides (the CPU computes into it); any other out of the result's size
// keeps its strides, and one it resizes is contiguous.
at::Tensor& cholesky_inverse_out(const at::Tensor& self, bool upper, at::Tensor& out) {
  check_devices(cholesky_inverse_name, {&self, &out});
  check_square_matrices(self, cholesky_inverse_name);
  check_out_dtype_first(self.scalar_type(), out, OutputDtype::castable);
  check_float32_only(cholesky_inverse_name, self);
  const bool takes_columns = out.numel() == 0 && out.scalar_type() == self.scalar_type();
  check_output(cholesky_inverse_name, out, self.scalar_type(), self.sizes(), {&self}, OutputDtype::castable);
  const at::Tensor inverse = inverse_from_factor(self, upper);
  if (takes_columns) {
    out.as_strided_(inverse.sizes(), inverse.strides());
    check_no_aliasing(out, {&self});  // restrided: its memory in another order
  }
  out.copy_(inverse);
  return out;
}

at::Tensor cholesky_inverse(const at::Tensor& self, bool upper) {
  check_devices(cholesky_inverse_name, {&self});
  check_square_matrices(self, cholesky_inverse_name);
  check_float32_only(cholesky_inverse_name, self);
  return inverse_from_factor(self, upper);
}

}  // namespace mps_ops
