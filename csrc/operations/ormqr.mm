// Host stubs of ormqr (torch.ormqr, functional and out=): other multiplied
// by the Q of geqrf's reflectors; kernel in csrc/kernels/ormqr.metal. Checks,
// their order and messages are the CPU's. The result is column-major per
// matrix, as the CPU's (LAPACK's) is.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include "../kernels/ormqr_params.h"

#include <ATen/ops/empty.h>

namespace mps_ops {

namespace {

constexpr const char* op_name = "ormqr";

void check_ormqr_operands(const at::Tensor& input, const at::Tensor& tau, const at::Tensor& other, bool left) {
  check_devices(op_name, {&input, &tau, &other});
  TORCH_CHECK(input.dim() >= 2, "torch.ormqr: input must have at least 2 dimensions.");
  TORCH_CHECK(other.dim() >= 2, "torch.ormqr: other must have at least 2 dimensions.");
  const int64_t side = left ? -2 : -1;
  TORCH_CHECK(other.size(side) == input.size(-2), "torch.ormqr: other.shape[", side,
              "] must be equal to input.shape[-2]");
  TORCH_CHECK(tau.size(-1) == std::min(other.size(side), input.size(-1)),
              "torch.ormqr: tau.shape[-1] must be equal to min(other.shape[", side, "], input.shape[-1])");
  TORCH_CHECK(input.dim() - tau.dim() == 1,
              "torch.ormqr: Expected tau to have one dimension less than input, but got tau.ndim equal to ",
              tau.dim(), " and input.ndim is equal to ", input.dim());
  TORCH_CHECK(input.dim() == other.dim(),
              "torch.ormqr: Expected other to have the same number of dimensions as input, but got other.ndim "
              "equal to ",
              other.dim(), " and input.ndim is equal to ", input.dim());
  const auto batch = input.sizes().slice(0, input.dim() - 2);
  TORCH_CHECK(tau.sizes().slice(0, tau.dim() - 1).equals(batch),
              "torch.ormqr: Expected batch dimensions of tau to be equal to input.shape[:-2], but got ",
              tau.sizes().slice(0, tau.dim() - 1));
  TORCH_CHECK(other.sizes().slice(0, other.dim() - 2).equals(batch),
              "torch.ormqr: Expected batch dimensions of other to be equal to input.shape[:-2], but got ",
              other.sizes().slice(0, other.dim() - 2));
  TORCH_CHECK(tau.scalar_type() == input.scalar_type(),
              "torch.ormqr: Expected input and tau to have the same dtype, but input has dtype", input.scalar_type(),
              " and tau has dtype ", tau.scalar_type());
  TORCH_CHECK(other.scalar_type() == input.scalar_type(),
              "torch.ormqr: Expected input and other to have the same dtype, but input has dtype",
              input.scalar_type(), " and other has dtype ", other.scalar_type());
}

at::Tensor ormqr_result(const at::Tensor& input, const at::Tensor& tau, const at::Tensor& other, bool left,
                        bool transpose) {
  static KernelCache kernels("ormqr");
  at::Tensor result = batched_column_major_copy(other);
  const int64_t reflectors = tau.size(-1);
  if (result.numel() == 0 || reflectors == 0) {
    return result;
  }
  const int64_t rows = other.size(-2), columns = other.size(-1);
  const int64_t batches = result.numel() / (rows * columns);
  const int64_t vectors = left ? columns : rows;
  TORCH_CHECK(vectors <= UINT32_MAX && batches <= UINT32_MAX,
              "mps_ops: ormqr of more than 2**32 - 1 matrices or vectors per matrix");
  // The kernel reads the reflectors through any strides, batches flattened.
  const at::Tensor reflector_storage = input.reshape({batches, input.size(-2), input.size(-1)});
  const at::Tensor taus = tau.reshape({batches, reflectors}).contiguous();
  ormqr_params p{};
  p.reflectors = reflectors;
  p.length = input.size(-2);
  p.input_row_stride = reflector_storage.stride(1);
  p.input_column_stride = reflector_storage.stride(2);
  p.input_batch_stride = reflector_storage.stride(0);
  p.tau_batch_stride = taus.stride(0);
  // Column-major matrices: a column is contiguous, a row steps by `rows`.
  p.vector_stride = left ? rows : 1;
  p.element_stride = left ? 1 : rows;
  p.result_batch_stride = rows * columns;
  p.ascending = left == transpose;
  KernelFunction kernel(kernels.get(Variant::dense, at::kFloat, at::kFloat));
  kernel.bind_operands(result, reflector_storage, taus).bind(p);
  kernel.dispatch(Dim3{static_cast<uint32_t>(vectors), static_cast<uint32_t>(batches), 1});
  return result;
}

}  // namespace

at::Tensor ormqr(const at::Tensor& self, const at::Tensor& input2, const at::Tensor& input3, bool left,
                 bool transpose) {
  check_ormqr_operands(self, input2, input3, left);
  check_float32_only(op_name, self);
  return ormqr_result(self, input2, input3, left, transpose);
}

at::Tensor& ormqr_out(const at::Tensor& self, const at::Tensor& input2, const at::Tensor& input3, bool left,
                      bool transpose, at::Tensor& out) {
  check_ormqr_operands(self, input2, input3, left);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(),
              "torch.ormqr: Expected input and result to have the same dtype, but input has dtype",
              self.scalar_type(), " and result has dtype ", out.scalar_type());
  check_float32_only(op_name, self);
  const at::Tensor result = ormqr_result(self, input2, input3, left, transpose);
  check_output(op_name, out, self.scalar_type(), result.sizes(), {&self, &input2, &input3});
  out.copy_(result);
  return out;
}

}  // namespace mps_ops
