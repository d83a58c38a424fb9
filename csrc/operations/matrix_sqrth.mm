// Host stub of linalg_matrix_sqrth (torch 2.14 and later; older releases
// reach it as torch.ops.mps_ops_compat.linalg_matrix_sqrth): the principal
// square root of symmetric positive-definite matrices, X = Q sqrt(L) Q^T from
// the eigendecomposition of A's lower triangle, as the CPU computes it.
//
// The eigendecomposition is torch's eigh, which torch's MPS backend runs
// natively in every release that defines this op (2.14 on); our kernel
// (csrc/kernels/matrix_sqrth.metal) forms X from it in one pass. Its out=
// form is torch's generated wrapper over this stub.
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include "../kernels/matrix_sqrth_params.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/linalg_eigh.h>

namespace mps_ops {

namespace {

constexpr const char* sqrth_name = "linalg.matrix_sqrth";

}  // namespace

at::Tensor linalg_matrix_sqrth(const at::Tensor& self) {
  check_device(sqrth_name, self);
  check_square_matrices(self, sqrth_name);
  check_floating_or_complex(self, sqrth_name, /*allow_low_precision=*/false);
  check_float32_only("linalg_matrix_sqrth", self);
  static KernelCache kernels("sqrth_product");
  at::Tensor out = at::empty(self.sizes(), self.options());
  const int64_t n = self.size(-1);
  if (out.numel() == 0) {
    return out;
  }
  TORCH_CHECK(out.numel() <= UINT32_MAX, "mps_ops: linalg_matrix_sqrth of 2**32 elements or more");
  const auto [values, vectors] = at::linalg_eigh(self, "L");
  const int64_t matrices = out.numel() / (n * n);
  // Views: eigh's column-major Q and contiguous L, one matrix per batch.
  const at::Tensor q = vectors.reshape({matrices, n, n});
  const at::Tensor l = values.reshape({matrices, n});
  sqrth_product_params params{};
  params.n = static_cast<int>(n);
  params.matrices = matrices;
  params.vectors_batch_stride = q.stride(0);
  params.vectors_row_stride = q.stride(1);
  params.vectors_column_stride = q.stride(2);
  params.values_batch_stride = l.stride(0);
  KernelFunction kernel(kernels.get(Variant::dense, at::kFloat, at::kFloat));
  kernel.bind_operands(out, q, l).bind(params);
  kernel.dispatch(Dim3{static_cast<uint32_t>(out.numel()), 1, 1});
  return out;
}

}  // namespace mps_ops
