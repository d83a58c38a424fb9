// Host stub of _cholesky_solve_helper, the kernel under torch.cholesky_solve
// (which checks and broadcasts its operands first): a `fill` for torch 2.9
// to 2.11 (Gaussian-process libraries solve with Cholesky factors on every
// step). Kernel in csrc/kernels/cholesky_solve.metal. The result is a
// batched column-major copy of B solved in place, the CPU's layout.
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

}  // namespace

at::Tensor _cholesky_solve_helper(const at::Tensor& self, const at::Tensor& A, bool upper) {
  static KernelCache kernels("cholesky_solve");
  check_cholesky_solve_operands(self, A);
  const int64_t n = A.size(-1), columns = self.size(-1);
  at::Tensor result = batched_column_major_copy(self);
  if (result.numel() == 0) {
    return result;
  }
  const int64_t matrices = result.numel() / (n * columns);
  TORCH_CHECK(n <= INT32_MAX && columns <= INT32_MAX && matrices <= UINT32_MAX, "mps_ops: _cholesky_solve_helper on ",
              self.device(), " of 2**31 rows or right-hand sides or more, or of too many matrices");
  // A view where the layout allows (one factor expanded over every batch:
  // stride 0).
  const at::Tensor factors = A.reshape({matrices, n, n});
  cholesky_solve_params p{};
  p.n = static_cast<int>(n);
  p.columns = static_cast<int>(columns);
  p.batch_stride = factors.stride(0);
  p.along_rows = upper ? factors.stride(2) : factors.stride(1);
  p.along_columns = upper ? factors.stride(1) : factors.stride(2);
  KernelFunction kernel(kernels.get(Variant::dense, at::kFloat, at::kFloat));
  kernel.bind_operands(result, factors).bind(p);
  kernel.dispatch(Dim3{static_cast<uint32_t>(columns), static_cast<uint32_t>(matrices), 1});
  return result;
}

}  // namespace mps_ops
