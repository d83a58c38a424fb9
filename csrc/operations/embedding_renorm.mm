// Host stub of embedding_renorm_ (nn.functional.embedding with max_norm);
// kernel in csrc/kernels/embedding_renorm.metal. Checks and messages are
// the CPU's.
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include "../kernels/embedding_renorm_params.h"

#include <ATen/ops/zeros.h>

namespace mps_ops {

at::Tensor& embedding_renorm_(at::Tensor& self, const at::Tensor& indices, double max_norm,
                              double norm_type) {
  static KernelCache kernels("embedding_renorm");
  check_device("embedding_renorm_", indices);
  check_device("embedding_renorm_", self);
  TORCH_CHECK(self.dim() == 2, "Expected 2-dimensional tensor, but got ", self.dim(),
              "-dimensional tensor for argument #1 'self' (while checking arguments for "
              "embedding_renorm_)");
  TORCH_CHECK(indices.scalar_type() == at::kLong || indices.scalar_type() == at::kInt,
              "Expected tensor for argument #2 'indices' to have one of the following scalar types: "
              "Long, Int; but got ", indices.scalar_type(), " instead (while checking arguments for "
              "embedding_renorm_)");
  const int64_t rows = self.size(0), n = indices.numel();
  if (n == 0) {
    return self;  // nothing named: the CPU looks at nothing, whatever the dtype
  }
  // The CPU's order: each named row is selected (IndexError out of range),
  // then its norm computed (RuntimeError for an integer self).
  const auto [lo, hi] = value_range(indices);
  TORCH_CHECK_INDEX(lo >= -rows && hi < rows, "select(): index ", lo < -rows ? lo : hi,
                    " out of range for tensor of size ", self.sizes(), " at dimension 0");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              "norm(): input dtype should be either floating point or complex. Got ", self.scalar_type(),
              " instead.");
  check_inplace("embedding_renorm_", self, {&indices});
  if (self.size(1) == 0) {
    return self;
  }
  TORCH_CHECK(n <= UINT32_MAX, "mps_ops: embedding_renorm_ of more than 2**32 - 1 indices");
  const at::Tensor flat = indices.reshape({-1});
  const at::Tensor index_list = flat.scalar_type() == at::kLong ? flat.contiguous() : flat.to(at::kLong);
  at::Tensor claimed = at::zeros({rows}, self.options().dtype(at::kInt));
  TORCH_CHECK(self.size(1) <= INT32_MAX, "mps_ops: embedding_renorm_ of rows over 2**31 - 1 elements");
  const KernelHandle* kernel = kernels.get(Variant::reduce, self.scalar_type(), self.scalar_type());
  const RowThreads threads = row_threads(self.size(1), n, backend().max_threads_per_group(kernel));
  TORCH_CHECK(threads.groups <= UINT32_MAX, "mps_ops: embedding_renorm_ over more than 2**32 - 1 threadgroups");
  const embedding_renorm_params params{static_cast<float>(max_norm), static_cast<float>(norm_type), rows,
                                       self.size(1), self.stride(0), self.stride(1), n,
                                       static_cast<uint32_t>(threads.share)};
  const uint32_t group = static_cast<uint32_t>(threads.group);
  KernelFunction function(kernel);
  function.bind_operands(self, claimed, index_list).bind(params);
  function.dispatch(Dim3{group, static_cast<uint32_t>(threads.groups), 1}, Dim3{group, 1, 1});
  return self;
}

}  // namespace mps_ops
