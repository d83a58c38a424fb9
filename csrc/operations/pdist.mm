// Host stubs of _pdist_forward and _pdist_backward (torch.pdist and its
// gradient) and _cdist_backward (torch.cdist's gradient: a fill for torch
// 2.9 to 2.12); kernels in csrc/kernels/pdist.metal. Checks and messages are
// the CPU's; float32 only, as the CPU computes both only in float and double.
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include "../kernels/pdist_params.h"

#include <ATen/ExpandUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <vector>

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

at::Tensor _cdist_backward(const at::Tensor& grad, const at::Tensor& x1, const at::Tensor& x2, double p,
                           const at::Tensor& cdist) {
  static KernelCache kernels("cdist_backward");
  const char* op = "_cdist_backward";
  check_devices(op, {&grad, &x1, &x2, &cdist});
  // The CPU reads sizes -1 and -2 first (IndexError below 2 dims).
  TORCH_CHECK_INDEX(x1.dim() >= 2 && x2.dim() >= 2, "Dimension out of range (", op,
                    " expects x1 and x2 of at least 2 dims, got ", x1.sizes(), " and ", x2.sizes(), ")");
  const int64_t r1 = x1.size(-2), r2 = x2.size(-2), m = x1.size(-1);
  std::vector<int64_t> batch = at::infer_size(x1.sizes().slice(0, x1.dim() - 2), x2.sizes().slice(0, x2.dim() - 2));
  const int64_t batch_size = c10::multiply_integers(batch);
  if (r1 == 0 || r2 == 0 || m == 0 || batch_size == 0) {
    return at::zeros_like(x1);
  }
  // The CPU's dtype dispatch is x1's; it reads the others as x1's dtype.
  check_dtype(op, x1);
  TORCH_CHECK_NOT_IMPLEMENTED(x1.scalar_type() == at::kFloat, "\"cdist_backward\" not implemented for '",
                              c10::toString(x1.scalar_type()), "' on ", x1.device());
  for (const at::Tensor* t : {&grad, &x2, &cdist}) {
    TORCH_CHECK(t->scalar_type() == at::kFloat, "expected scalar type Float but found ", t->scalar_type(), " (",
                op, " on ", t->device(), ")");
  }
  // What the CPU reads unchecked (past the end of shorter ones): x2 rows of
  // x1's length, grad and cdist one value per (batch, r1, r2), in any shape
  // (it reads them flat).
  const int64_t pairs = batch_size * r1 * r2;
  TORCH_CHECK(x2.size(-1) == m, op, ": x1's rows have ", m, " elements, x2's ", x2.size(-1), " (",
              x1.scalar_type(), " on ", x1.device(), ")");
  TORCH_CHECK(grad.numel() == pairs && cdist.numel() == pairs, op, ": grad and cdist need ", pairs,
              " elements (batch x r1 x r2), got ", grad.numel(), " and ", cdist.numel());
  std::vector<int64_t> x1_shape = batch, x2_shape = batch;
  x1_shape.insert(x1_shape.end(), {r1, m});
  x2_shape.insert(x2_shape.end(), {r2, m});
  const at::Tensor a = x1.expand(x1_shape).contiguous(), b = x2.expand(x2_shape).contiguous();
  const at::Tensor g = grad.contiguous(), d = cdist.contiguous();
  // The broadcast x1's gradient: autograd sums it back over the broadcast dims.
  at::Tensor result = at::empty(x1_shape, x1.options().memory_format(at::MemoryFormat::Contiguous));
  TORCH_CHECK(m <= UINT32_MAX && r1 <= UINT32_MAX && batch_size <= UINT32_MAX, "mps_ops: ", op,
              " grid too large");
  const cdist_params params{static_cast<float>(p), r1, r2, m};
  KernelFunction function(kernels.get(Variant::dense, at::kFloat, at::kFloat));
  function.bind_operands(result, g, a, b, d).bind(params);
  function.dispatch(
      Dim3{static_cast<uint32_t>(m), static_cast<uint32_t>(r1), static_cast<uint32_t>(batch_size)});
  return result;
}

}  // namespace mps_ops
