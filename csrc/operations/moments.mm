// Host stubs of var.correction_out and std.correction_out (torch.var /
// torch.std with out=); kernels in csrc/kernels/moments.metal. Checks and
// messages are the CPU's.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include "../kernels/moments_params.h"

namespace mps_ops {

namespace {

at::Tensor& moments_out(const char* name, bool take_sqrt, const at::Tensor& self_arg,
                        at::OptionalIntArrayRef dim, const std::optional<at::Scalar>& correction,
                        bool keepdim, at::Tensor& out) {
  static KernelCache kernels("var");
  check_device(name, self_arg);
  TORCH_CHECK(at::isFloatingType(self_arg.scalar_type()) || at::isComplexType(self_arg.scalar_type()),
              "std and var only support floating point and complex dtypes");
  check_dtype(name, self_arg);
  // The CPU computes in the out's floating dtype (a bfloat16 input with a
  // float out gets a float variance, not a bfloat16 one cast up).
  const bool in_out_dtype = at::isFloatingType(out.scalar_type()) && out.scalar_type() != at::kDouble &&
                            out.scalar_type() != self_arg.scalar_type();
  const at::Tensor self = in_out_dtype ? self_arg.to(out.scalar_type()) : self_arg;
  const ReductionPlan plan = plan_reduction(self, dim.value_or(at::IntArrayRef{}));
  check_output(name, out, self.scalar_type(), keepdim ? plan.kept_shape : plan.dropped_shape, {&self},
               OutputDtype::castable);
  // An out= of another dtype receives a copy, as a non-contiguous one does.
  const ContiguousOutput target(out, self.scalar_type());
  const double correction_value = correction.value_or(1).toDouble();
  if (static_cast<double>(plan.layout.inner_numel) - correction_value <= 0) {
    TORCH_WARN(name, "(): degrees of freedom is <= 0. Correction should be strictly less than the ",
               "reduction factor (input numel divided by output numel).");
  }
  const moments_params params{static_cast<float>(correction_value), take_sqrt};
  dispatch_reduction(reducer_kernels(kernels, self.scalar_type(), self.scalar_type()), {&target.tensor},
                     self, plan, params);
  target.copy_back();
  return out;
}

}  // namespace

at::Tensor& var_correction_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                               const std::optional<at::Scalar>& correction, bool keepdim,
                               at::Tensor& out) {
  return moments_out("var", false, self, dim, correction, keepdim, out);
}

at::Tensor& std_correction_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                               const std::optional<at::Scalar>& correction, bool keepdim,
                               at::Tensor& out) {
  return moments_out("std", true, self, dim, correction, keepdim, out);
}

}  // namespace mps_ops
