// Host stubs of _pdist_forward and _pdist_backward (torch.pdist and its
// gradient); kernels in csrc/kernels/pdist.metal. Checks and messages are
// the CPU's; float32 only, as the CPU computes pdist only in float and double.
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include "../kernels/pdist_params.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

namespace mps_ops {

namespace {

void check_pdist_input(const char* op, const at::Tensor& self) {
  check_device(op, self);
  check_dtype(op, self);
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() == at::kFloat, "\"pdist\" not implemented for '",
                              c10::toString(self.scalar_type()), "' on ", self.device());
  // The CPU reads size(0) and size(1) unchecked (IndexError below 2 dims)
  // and reads a tensor of more dims as (size(0), size(1)): refused here.
  TORCH_CHECK_INDEX(self.dim() >= 2, "Dimension out of range (", op, " expects a 2-D self, but got ",
                    self.sizes(), ")");
  TORCH_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
}

}  // namespace

at::Tensor _pdist_forward(const at::Tensor& self, double p) {
  static KernelCache kernels("pdist_forward");
  check_pdist_input("_pdist_forward", self);
  TORCH_CHECK(self.is_contiguous(), "_pdist_forward requires contiguous input");
  const int64_t n = self.size(0), m = self.size(1);
  const int64_t pairs = n > 1 ? n * (n - 1) / 2 : 0;
  if (pairs == 0) {
    return at::empty({0}, self.options());
  }
  if (m == 0) {
    return at::zeros({pairs}, self.options());
  }
  TORCH_CHECK(pairs <= UINT32_MAX, "mps_ops: _pdist_forward of more than 2**32 - 1 pairs");
  const KernelHandle* kernel = kernels.get(Variant::reduce, at::kFloat, at::kFloat);
  const RowThreads rows = row_threads(m, pairs, backend().max_threads_per_group(kernel));
  TORCH_CHECK(rows.groups <= UINT32_MAX, "mps_ops: _pdist_forward over more than 2**32 - 1 threadgroups");
  at::Tensor out = at::empty({pairs}, self.options());
  const pdist_params params{static_cast<float>(p), static_cast<unsigned int>(rows.share), n, m, pairs};
  KernelFunction function(kernel);
  function.bind_operands(out, self).bind(params);
  function.dispatch(Dim3{static_cast<uint32_t>(rows.group), static_cast<uint32_t>(rows.groups), 1},
                    Dim3{static_cast<uint32_t>(rows.group), 1, 1});
  return out;
}

at::Tensor _pdist_backward(const at::Tensor& grad, const at::Tensor& self, double p,
                           const at::Tensor& pdist) {
  static KernelCache kernels("pdist_backward");
  check_pdist_input("_pdist_backward", self);
  check_device("_pdist_backward", grad);
  check_device("_pdist_backward", pdist);
  TORCH_CHECK(self.is_contiguous(), "_pdist_backward requires self to be contiguous");
  TORCH_CHECK(pdist.is_contiguous(), "_pdist_backward requires pdist to be contiguous");
  const int64_t n = self.size(0), m = self.size(1);
  const int64_t pairs = n > 1 ? n * (n - 1) / 2 : 0;
  TORCH_CHECK_INDEX(grad.dim() > 0, "Dimension specified as 0 but tensor has no dimensions (_pdist_backward's grad)");
  // The CPU reads grad through its first stride and pdist flat, unchecked:
  // anything but both of one element per pair is refused.
  TORCH_CHECK(grad.dim() == 1 && grad.numel() == pairs && pdist.numel() == pairs && grad.scalar_type() == at::kFloat &&
                  pdist.scalar_type() == at::kFloat,
              "_pdist_backward: expected float grad and pdist of ", pairs, " elements");
  at::Tensor result = at::zeros(self.sizes(), self.options());
  if (pairs == 0 || m == 0) {
    return result;
  }
  TORCH_CHECK(n <= UINT32_MAX && m <= UINT32_MAX, "mps_ops: _pdist_backward grid too large");
  const at::Tensor grad_c = grad.contiguous();
  const pdist_params params{static_cast<float>(p), 0, n, m, pairs};
  KernelFunction function(kernels.get(Variant::dense, at::kFloat, at::kFloat));
  function.bind_operands(result, grad_c, self, pdist).bind(params);
  function.dispatch(Dim3{static_cast<uint32_t>(m), static_cast<uint32_t>(n), 1});
  return result;
}

}  // namespace mps_ops
