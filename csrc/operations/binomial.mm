// Host stub of binomial: a `fill` op (torch 2.9 to 2.13 have no MPS kernel
// for it: torch.binomial and torch.distributions.Binomial's samples raised
// on a Mac). Kernel in csrc/kernels/binomial.metal, whose streams are keyed
// by philox_key: a fixed seed reproduces, the generator advances, and the
// draws differ from the CPU's mt19937 ones (as CUDA's do); the distribution
// is the same.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/kernel_inputs.h"
#include "../runtime/op_checks.h"

#include "../kernels/include/mps_ops/no_params.h"

#include <ATen/ExpandUtils.h>
#include <ATen/ops/empty.h>

namespace mps_ops {

at::Tensor binomial(const at::Tensor& count, const at::Tensor& prob, std::optional<at::Generator> generator) {
  static KernelCache kernels("binomial");
  constexpr const char* op = "binomial";
  check_devices(op, {&count, &prob});
  // The CPU's checks, in its order: the dtypes' kinds, then its
  // TensorIterator's (shapes, then one dtype), then its dtype dispatch.
  TORCH_CHECK_VALUE(at::isFloatingType(count.scalar_type()),
                    "binomial only supports floating-point dtypes for count, got: ", count.scalar_type());
  TORCH_CHECK_VALUE(at::isFloatingType(prob.scalar_type()),
                    "binomial only supports floating-point dtypes for prob, got: ", prob.scalar_type());
  const std::vector<int64_t> shape = at::infer_size(count.sizes(), prob.sizes());
  check_same_dtype(count.scalar_type(), {&prob});
  check_dtype(op, count);
  at::Tensor out = first_operand_output({&count, &prob}, shape);
  const c10::Device device = out.device();
  if (out.numel() == 0) {
    return out;
  }
  TORCH_CHECK(out.numel() <= UINT32_MAX, "mps_ops: binomial of more than 2**32 - 1 elements");
  // (A 0-dim CPU operand moves to the device: the kernel reads every operand.)
  const at::Tensor counts = count.to(device).expand(shape).contiguous();
  const at::Tensor probs = prob.to(device).expand(shape).contiguous();
  const at::Tensor key = philox_key(out.options(), std::move(generator));
  const ContiguousOutput target(out);
  KernelFunction function(kernels.get(Variant::dense, count.scalar_type(), count.scalar_type()));
  function.bind_operands(target.tensor, counts, probs, key).bind(no_params{});
  function.dispatch(Dim3{static_cast<uint32_t>(out.numel()), 1, 1});
  target.copy_back();
  return out;
}

}  // namespace mps_ops
