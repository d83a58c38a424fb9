// Host stub of batch_norm_update_stats (what batch_norm's CPU-style training
// path calls for the batch statistics); kernels in
// csrc/kernels/batch_norm_stats.metal. Checks and messages are the CPU's,
// plus one the CPU lacks: running statistics must have one element per
// channel (the CPU reads past a shorter one).
#include "../runtime/channel_pass.h"
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>


namespace mps_ops {

namespace {

void check_running(const char* what, const at::Tensor& input, const std::optional<at::Tensor>& running,
                   int64_t channels, c10::ScalarType param_dtype) {
  if (!running || !running->defined()) {
    return;
  }
  check_inplace("batch_norm_update_stats", *running, {&input});
  TORCH_CHECK(running->dim() == 1, "TensorAccessor expected 1 dims but tensor has ", running->dim(),
              " (batch_norm_update_stats' ", what, ")");
  TORCH_CHECK(running->scalar_type() == param_dtype,
              "mixed dtype (CPU): expect parameter to have scalar type of Float");
  TORCH_CHECK(running->numel() == channels, "batch_norm_update_stats: ", what, " should contain ",
              channels, " elements not ", running->numel());
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> batch_norm_update_stats(
    const at::Tensor& input, const std::optional<at::Tensor>& running_mean,
    const std::optional<at::Tensor>& running_var, double momentum) {
  static KernelCache stats_kernels("batch_norm_stats"), update_kernels("batch_norm_update_stats");
  check_device("batch_norm_update_stats", input);
  check_dtype("batch_norm_update_stats", input);
  const auto dtype = input.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(dtype), "\"batch_norm_update_stats\" not implemented for '",
                              c10::toString(dtype), "' on ", input.device());
  TORCH_CHECK_INDEX(input.dim() >= 2, "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  TORCH_CHECK(input.numel() > 0, "input tensor must have at least one element, but got input_sizes = ",
              input.sizes());
  const int64_t channels = input.size(1);
  const bool has_mean = running_mean && running_mean->defined();
  const bool has_var = running_var && running_var->defined();
  // Mixed dtype: a half/bfloat input with float running statistics keeps
  // its statistics in float.
  const at::Tensor* any_running = has_mean ? &*running_mean : has_var ? &*running_var : nullptr;
  const bool mixed = any_running && dtype != at::kFloat && any_running->scalar_type() == at::kFloat;
  const auto param_dtype = mixed ? at::kFloat : dtype;
  check_running("running_mean", input, running_mean, channels, param_dtype);
  check_running("running_var", input, running_var, channels, param_dtype);

  const ReductionPlan plan = channel_plan(input);
  at::Tensor mean = at::empty({channels}, input.options().dtype(param_dtype));
  at::Tensor var = at::empty({channels}, input.options().dtype(param_dtype));
  if (has_mean || has_var) {
    // Updated in place where contiguous, else through a copy; a missing one
    // gets scratch space (the kernel updates both).
    auto writable = [&](const std::optional<at::Tensor>& running, bool present) {
      return ContiguousOutput(present ? *running : at::zeros({channels}, mean.options()),
                              ContiguousOutput::Contents::keep);
    };
    const ContiguousOutput rm = writable(running_mean, has_mean), rv = writable(running_var, has_var);
    const float m = static_cast<float>(momentum);
    dispatch_reduction(update_kernels.get(Variant::reduce, param_dtype, dtype),
                       {&mean, &var, &rm.tensor, &rv.tensor}, input, plan, m);
    rm.copy_back();
    rv.copy_back();
    return {mean, var};
  }
  const no_params nothing{};
  dispatch_reduction(reducer_kernels(stats_kernels, param_dtype, dtype), {&mean, &var}, input, plan,
                     nothing);
  return {mean, var};
}

}  // namespace mps_ops
