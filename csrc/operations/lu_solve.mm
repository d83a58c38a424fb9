// Host stub of linalg_lu_solve (torch.linalg.lu_solve and torch.lu_solve;
// not its out= form: csrc/native_functions.yaml says why): solves A X = B, A^H X = B, X A = B or X A^H = B from
// linalg_lu_factor's packed LU and pivots, B's batch broadcast against LU's;
// kernel in csrc/kernels/lu_solve.metal (one threadgroup per four right-hand sides).
// Checks, their order and messages are the CPU's. float32 only (the CPU's
// LAPACK also takes float64 and complex).
//
// X A = B is A^T X^T = B^T: its right-hand sides are B's rows, so the
// result is row-major there and column-major for left=True, as the CPU's.
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/linalg_results.h"
#include "../runtime/op_checks.h"

#include "../kernels/lu_solve_params.h"

#include <ATen/ExpandUtils.h>
#include <ATen/ops/empty.h>

#include <vector>

namespace mps_ops {

namespace {

void check_lu_solve_inputs(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& B, bool left) {
  check_devices("linalg.lu_solve", {&LU, &pivots, &B});
  check_floating_or_complex(LU, "torch.linalg.lu_solve");
  TORCH_CHECK(LU.scalar_type() == B.scalar_type(),
              "linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type ", LU.scalar_type(),
              " and B of type ", B.scalar_type(), " instead");
  TORCH_CHECK(pivots.scalar_type() == at::kInt, "linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32");
  check_square_matrices(LU, "torch.linalg.lu_solve");
  TORCH_CHECK(B.dim() >= 2, "linalg.lu_solve: The input tensor B must have at least 2 dimensions.");
  const bool compatible = left ? LU.size(-2) == B.size(-2) : LU.size(-1) == B.size(-1);
  TORCH_CHECK(compatible, "linalg.lu_solve: Incompatible shapes of A and B for the equation ", left ? "AX = B" : "XA = B",
              " (", LU.size(-2), "x", LU.size(-1), " and ", B.size(-2), "x", B.size(-1), ")");
  TORCH_CHECK(LU.size(-1) == pivots.size(-1),
              "linalg.lu_solve: Number of pivots per batch should be same as the dimension of the matrix");
  TORCH_CHECK(LU.sizes().slice(0, LU.dim() - 1).equals(pivots.sizes()),
              "linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the same, but got pivots with shape ",
              pivots.sizes(), " instead");
}

// The result, column-major where left (the CPU's layout), row-major where
// not; checks done.
at::Tensor solve(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& B, bool left, bool adjoint) {
  static KernelCache kernels("lu_solve");
  const int64_t n = LU.size(-1);
  // The CPU's broadcast, in its words (B's batch is tensor a).
  const std::vector<int64_t> batch =
      at::infer_size(matrix_batch(B), matrix_batch(LU));
  const int64_t columns = left ? B.size(-1) : B.size(-2);  // right-hand sides per matrix
  // Each right-hand side n contiguous floats: X's columns (left) or rows.
  at::Tensor buffer = at::empty(batch_shape_with(batch, {columns, n}), B.options());
  at::Tensor result = left ? buffer.mT() : buffer;
  result.copy_(B.expand(batch_shape_with(batch, {B.size(-2), B.size(-1)})));
  if (buffer.numel() == 0) {
    return result;
  }
  const auto [lowest, highest] = value_range(pivots);
  TORCH_CHECK(lowest >= 1,
              "Pivots given to lu_solve must all be greater or equal to 1. Did you properly pass the result of lu_factor?");
  TORCH_CHECK(highest <= n, "Pivots given to lu_solve must all be smaller or equal to LU.size(-2). Did you properly pass "
                            "the result of lu_factor?");
  const at::Tensor factors = LU.expand(batch_shape_with(batch, {n, n})).reshape({-1, n, n});
  const at::Tensor interchanges = pivots.expand(batch_shape_with(batch, {n})).reshape({-1, n}).contiguous();
  const KernelHandle* handle = kernels.get(Variant::dense, at::kFloat, at::kFloat);
  const uint32_t threads = power_of_two_group(n, lu_solve_max_threads, handle);
  const int64_t groups_per_matrix = (columns + lu_solve_group_columns - 1) / lu_solve_group_columns;
  const int64_t groups = buffer.numel() / (n * columns) * groups_per_matrix;
  TORCH_CHECK(groups <= UINT32_MAX / threads, "mps_ops: linalg_lu_solve of too many right-hand sides");
  lu_solve_params params{};
  params.n = static_cast<int>(n);
  params.columns = static_cast<int>(columns);
  // X A = B is A^T X^T = B^T; X A^H = B is A X^H = B^H.
  params.transposed = (left ? adjoint : !adjoint) ? 1 : 0;
  params.groups_per_matrix = groups_per_matrix;
  params.lu_batch_stride = factors.stride(0);
  params.lu_row_stride = factors.stride(1);
  params.lu_column_stride = factors.stride(2);
  KernelFunction kernel(handle);
  kernel.bind_operands(buffer, factors, interchanges).bind(params);
  kernel.dispatch(Dim3{threads * static_cast<uint32_t>(groups), 1, 1}, Dim3{threads, 1, 1});
  return result;
}

}  // namespace

at::Tensor linalg_lu_solve(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& B, bool left,
                           bool adjoint) {
  check_lu_solve_inputs(LU, pivots, B, left);
  check_float32_only("linalg_lu_solve", LU);
  return solve(LU, pivots, B, left, adjoint);
}

}  // namespace mps_ops
