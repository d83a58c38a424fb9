// Host stubs of var.correction_out and std.correction_out (torch.var /
// torch.std with out=; `fill` ops) and of var_mean and std_mean (functional
// and out=; `override` ops, whose stock MPS kernels compute the mean through
// MPSGraph); kernels in csrc/kernels/moments.metal. Checks and messages are
// the CPU's.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include "../kernels/moments_params.h"

#include <ATen/ops/empty.h>

#include <tuple>

namespace mps_ops {

namespace {

// The variance or standard deviation into out and, where mean_out is given
// (var_mean, std_mean), the mean into it: one pass over each slice.
void moments_into(const char* name, bool take_sqrt, const at::Tensor& self_arg, at::OptionalIntArrayRef dim,
                  const std::optional<at::Scalar>& correction, bool keepdim, at::Tensor& out,
                  at::Tensor* mean_out) {
  static KernelCache kernels("var");
  static KernelCache with_mean_kernels("var_mean");
  check_device(name, self_arg);
  TORCH_CHECK(at::isFloatingType(self_arg.scalar_type()) || at::isComplexType(self_arg.scalar_type()),
              mean_out != nullptr ? name : "std and var", " only support floating point and complex dtypes");
  if (mean_out != nullptr) {
    // var_mean's outs are checked before its dtype dispatch: the variance's
    // is real (a complex input's real type).
    check_out_dtype_first(c10::toRealValueType(self_arg.scalar_type()), out);
  }
  check_dtype(name, self_arg);
  // var and std: the CPU computes in the out's floating dtype (a bfloat16
  // input with a float out gets a float variance, not a bfloat16 one cast
  // up). var_mean and std_mean take outs of exactly the input's dtype.
  const bool with_mean = mean_out != nullptr;
  const OutputDtype rule = with_mean ? OutputDtype::exact : OutputDtype::castable;
  const bool in_out_dtype = !with_mean && at::isFloatingType(out.scalar_type()) &&
                            out.scalar_type() != at::kDouble && out.scalar_type() != self_arg.scalar_type();
  const at::Tensor self = in_out_dtype ? self_arg.to(out.scalar_type()) : self_arg;
  const ReductionPlan plan = plan_reduction(self, dim.value_or(at::IntArrayRef{}));
  const at::IntArrayRef shape = keepdim ? plan.kept_shape : plan.dropped_shape;
  check_output(name, out, self.scalar_type(), shape, {&self}, rule);
  if (with_mean) {
    check_output(name, *mean_out, self.scalar_type(), shape, {&self, &out}, rule);
  }
  // An out= of another dtype receives a copy, as a non-contiguous one does.
  const ContiguousOutput target(out, self.scalar_type());
  const double correction_value = correction.value_or(1).toDouble();
  if (static_cast<double>(plan.layout.inner_numel) - correction_value <= 0) {
    TORCH_WARN(name, "(): degrees of freedom is <= 0. Correction should be strictly less than the ",
               "reduction factor (input numel divided by output numel).");
  }
  const moments_params params{static_cast<float>(correction_value), take_sqrt};
  if (mean_out == nullptr) {
    dispatch_reduction(reducer_kernels(kernels, self.scalar_type(), self.scalar_type()), {&target.tensor}, self,
                       plan, params);
  } else {
    const ContiguousOutput mean(*mean_out, self.scalar_type());
    dispatch_reduction(reducer_kernels(with_mean_kernels, self.scalar_type(), self.scalar_type()),
                       {&target.tensor, &mean.tensor}, self, plan, params);
    mean.copy_back();
  }
  target.copy_back();
}

at::Tensor& moments_out(const char* name, bool take_sqrt, const at::Tensor& self, at::OptionalIntArrayRef dim,
                        const std::optional<at::Scalar>& correction, bool keepdim, at::Tensor& out) {
  moments_into(name, take_sqrt, self, dim, correction, keepdim, out, nullptr);
  return out;
}

std::tuple<at::Tensor&, at::Tensor&> moments_mean_out(const char* name, bool take_sqrt, const at::Tensor& self,
                                                       at::OptionalIntArrayRef dim,
                                                       const std::optional<at::Scalar>& correction,
                                                       bool keepdim, at::Tensor& out0, at::Tensor& out1) {
  moments_into(name, take_sqrt, self, dim, correction, keepdim, out0, &out1);
  return {out0, out1};
}

std::tuple<at::Tensor, at::Tensor> moments_mean(const char* name, bool take_sqrt, const at::Tensor& self,
                                                at::OptionalIntArrayRef dim,
                                                const std::optional<at::Scalar>& correction, bool keepdim) {
  // The variance of the input's real type, the mean of its own, as the CPU's.
  at::Tensor out0 = at::empty({0}, self.options().dtype(c10::toRealValueType(self.scalar_type())));
  at::Tensor out1 = at::empty({0}, self.options());
  moments_into(name, take_sqrt, self, dim, correction, keepdim, out0, &out1);
  return {out0, out1};
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

std::tuple<at::Tensor, at::Tensor> var_mean_correction(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                                       const std::optional<at::Scalar>& correction, bool keepdim) {
  return moments_mean("var_mean", false, self, dim, correction, keepdim);
}

std::tuple<at::Tensor&, at::Tensor&> var_mean_correction_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                                             const std::optional<at::Scalar>& correction,
                                                             bool keepdim, at::Tensor& out0, at::Tensor& out1) {
  return moments_mean_out("var_mean", false, self, dim, correction, keepdim, out0, out1);
}

std::tuple<at::Tensor, at::Tensor> std_mean_correction(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                                       const std::optional<at::Scalar>& correction, bool keepdim) {
  return moments_mean("std_mean", true, self, dim, correction, keepdim);
}

std::tuple<at::Tensor&, at::Tensor&> std_mean_correction_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                                             const std::optional<at::Scalar>& correction,
                                                             bool keepdim, at::Tensor& out0, at::Tensor& out1) {
  return moments_mean_out("std_mean", true, self, dim, correction, keepdim, out0, out1);
}

}  // namespace mps_ops
