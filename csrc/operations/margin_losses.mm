// Host stubs of multi_margin_loss and multilabel_margin_loss, each with its
// backward (functional and out=);
// kernels in csrc/kernels/margin_losses.metal, the mean/sum pass in
// csrc/kernels/sum.metal. Checks and messages are the CPU's; float32 only,
// as the CPU computes these losses only in float and double.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/error_checks.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include "../kernels/margin_losses_params.h"
#include "../kernels/sum_params.h"

#include <ATen/core/Reduction.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>

#include <limits>

namespace mps_ops {

namespace {

// Where a backward reads its grad_output: element 0 for a reduced loss or a
// 0-dim grad_output, else element i for sample i of a 1-D grad_output: of
// exactly one element per sample for multilabel_margin_loss (the CPU's
// check), of at least that many for multi_margin_loss (the CPU reads the
// first ones, and past a shorter one: refused). Returns whether it is per
// sample.
bool check_loss_grad(const char* op, const at::Tensor& grad_output, int64_t reduction, int64_t samples,
                     bool exact) {
  const bool per_sample = reduction == at::Reduction::None && grad_output.dim() > 0;
  if (per_sample) {
    TORCH_CHECK(grad_output.dim() == 1 && (exact ? grad_output.size(0) == samples : grad_output.size(0) >= samples),
                op, ": expected a grad_output of dimension 1 and size ", samples, " but got ",
                grad_output.sizes());
  } else {
    TORCH_CHECK(grad_output.numel() > 0, op, ": expected a non-empty grad_output");
  }
  return per_sample;
}

// The CPU's scale of a backward's terms, 1 / c or 1 / (n * c) for a mean,
// computed in double and rounded once.
float loss_grad_scale(int64_t reduction, int64_t n, int64_t c) {
  return static_cast<float>(reduction == at::Reduction::Mean ? 1.0 / (static_cast<double>(n) * c)
                                                             : 1.0 / static_cast<double>(c));
}

struct MarginProblem {
  int64_t n;          // samples
  int64_t c;          // classes
  at::Tensor x;       // (n, c), contiguous
  at::Tensor target;  // (n,), contiguous
  at::Tensor weight;  // (c,), contiguous; x when none was given (not read)
  multi_margin_params params;
  KernelFlag bad_target;  // raised by the kernel: a target outside [0, c)
};

// The CPU's order: p, shapes, (an empty input returns here: the caller),
// input dtype, target dtype, weight dtype, target range (the kernel's flag,
// read by check_targets after the dispatches).
void check_multi_margin_shapes(const char* op, const at::Tensor& self, const at::Tensor& target,
                               const at::Scalar& p, const std::optional<at::Tensor>& weight,
                               int64_t& n, int64_t& c) {
  check_device(op, self);
  check_device(op, target);
  TORCH_CHECK(p.toLong() == 1 || p.toLong() == 2, "only p == 1 and p == 2 supported");
  const int64_t ndims = self.dim();
  TORCH_CHECK((ndims == 2 && self.size(1) != 0) || (ndims == 1 && self.size(0) != 0) || ndims == 0,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              self.sizes());
  n = ndims <= 1 ? 1 : self.size(0);
  c = ndims == 0 ? 1 : self.size(-1);
  TORCH_CHECK(target.dim() <= 1 && target.numel() == n, op,
              ": target tensor should be 1-D with size equal to the number of input samples (batch "
              "size). Expected target size [", n, "], but got ", target.sizes(), ". Input has shape ",
              self.sizes(), ".");
  if (weight && weight->defined()) {
    check_device(op, *weight);
    TORCH_CHECK(weight->dim() <= 1 && weight->numel() == c, "inconsistent weight size, expected ", c,
                " but got ", weight->sizes());
  }
}

// The CPU's kernel exists for float only; its dtype dispatch comes before
// the out= checks.
void check_multi_margin_dtype(const char* op, const at::Tensor& self) {
  check_dtype(op, self);
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() == at::kFloat, "\"", op,
                              "_cpu_kernel\" not implemented for '", c10::toString(self.scalar_type()),
                              "' on ", self.device());
}

MarginProblem multi_margin_problem(const char* op, const at::Tensor& self, const at::Tensor& target,
                                   const at::Scalar& margin, const std::optional<at::Tensor>& weight,
                                   int64_t n, int64_t c) {
  check_multi_margin_dtype(op, self);
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ",
              target.scalar_type());
  const bool has_weight = weight && weight->defined();
  if (has_weight) {
    TORCH_CHECK(weight->scalar_type() == self.scalar_type(), "expected scalar type ",
                self.scalar_type(), " but found ", weight->scalar_type());
  }
  at::Tensor x = self.reshape({n, c}).contiguous();
  at::Tensor weights = has_weight ? weight->reshape({c}).contiguous() : x;
  return MarginProblem{n, c, std::move(x), target.reshape({n}).contiguous(), std::move(weights),
                       multi_margin_params{static_cast<float>(margin.toDouble()), 0, 0, has_weight, n, c,
                                           1.0f, 1},
                       KernelFlag()};
}

void check_targets(const char* op, MarginProblem& problem) {
  check_flag(op, std::move(problem.bad_target),
             [](const KernelFlag& flag) { TORCH_CHECK(!flag.raised(), "target out of range"); });
}

// multi_margin_loss's kernels: `share` threads per sample (row_threads, set
// in params), several samples per group. Dispatches it.
void dispatch_per_sample_rows(KernelFunction& function, const KernelHandle* kernel, MarginProblem& problem) {
  const RowThreads rows = row_threads(problem.c, problem.n, backend().max_threads_per_group(kernel));
  TORCH_CHECK(rows.groups <= UINT32_MAX, "mps_ops: multi_margin_loss over more than 2**32 - 1 threadgroups");
  problem.params.share = static_cast<unsigned int>(rows.share);
  function.bind(problem.params);
  function.dispatch(Dim3{static_cast<uint32_t>(rows.group), static_cast<uint32_t>(rows.groups), 1},
                    Dim3{static_cast<uint32_t>(rows.group), 1, 1});
}

// multilabel_margin_loss: one threadgroup per sample, a multiple of the SIMD
// width, at most 256.
Dim3 per_sample_group(int64_t c) {
  return Dim3{static_cast<uint32_t>(std::min<int64_t>(256, (c + 31) / 32 * 32)), 1, 1};
}

// mean / sum of per-sample losses into out (0-dim): one more reduction pass.
void reduce_losses(const at::Tensor& losses, int64_t reduction, at::Tensor& out) {
  static KernelCache sum_kernels("sum");
  const ContiguousOutput total(out);
  // The mean over no samples is 0 * inf: NaN.
  const sum_params scale{reduction == at::Reduction::Mean ? 1.0f / static_cast<float>(losses.numel())
                                                          : 1.0f};
  dispatch_reduction(reducer_kernels(sum_kernels, at::kFloat, at::kFloat), {&total.tensor}, losses,
                     plan_reduction(losses, {}), scale);
  total.copy_back();
}

}  // namespace

at::Tensor& multi_margin_loss_out(const at::Tensor& self, const at::Tensor& target,
                                  const at::Scalar& p, const at::Scalar& margin,
                                  const std::optional<at::Tensor>& weight, int64_t reduction,
                                  at::Tensor& out) {
  static KernelCache loss_kernels("multi_margin_loss");
  int64_t n = 0, c = 0;
  check_multi_margin_shapes("multi_margin_loss", self, target, p, weight, n, c);
  // The CPU's shapes: per sample only for a 1-D target.
  const bool per_sample = reduction == at::Reduction::None;
  check_multi_margin_dtype("multi_margin_loss", self);
  check_output("multi_margin_loss", out, self.scalar_type(),
               per_sample && target.dim() > 0 ? at::IntArrayRef{n} : at::IntArrayRef{},
               {&self, &target, weight ? &*weight : nullptr});
  if (self.numel() == 0) {
    return out.fill_(reduction == at::Reduction::Mean ? std::numeric_limits<double>::quiet_NaN() : 0.0);
  }
  MarginProblem problem = multi_margin_problem("multi_margin_loss", self, target, margin, weight, n, c);
  problem.params.p = static_cast<int>(p.toLong());
  // Per-sample losses are written to out; reduced ones to scratch space first.
  const ContiguousOutput losses(per_sample ? out : at::empty({problem.n}, self.options()));
  TORCH_CHECK(problem.n <= UINT32_MAX, "mps_ops: multi_margin_loss over more than 2**32 - 1 samples");
  const KernelHandle* kernel = loss_kernels.get(Variant::reduce, at::kFloat, at::kFloat);
  KernelFunction function(kernel);
  function.bind_operands(losses.tensor, problem.x, problem.target, problem.weight, problem.bad_target);
  dispatch_per_sample_rows(function, kernel, problem);
  if (per_sample) {
    losses.copy_back();
  } else {
    reduce_losses(losses.tensor, reduction, out);
  }
  check_targets("multi_margin_loss", problem);
  return out;
}

at::Tensor multi_margin_loss(const at::Tensor& self, const at::Tensor& target, const at::Scalar& p,
                             const at::Scalar& margin, const std::optional<at::Tensor>& weight,
                             int64_t reduction) {
  at::Tensor out = at::empty({0}, self.options());
  return multi_margin_loss_out(self, target, p, margin, weight, reduction, out);
}

at::Tensor& multi_margin_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                           const at::Tensor& target, const at::Scalar& p,
                                           const at::Scalar& margin,
                                           const std::optional<at::Tensor>& weight, int64_t reduction,
                                           at::Tensor& grad_input) {
  static KernelCache kernels("multi_margin_loss_backward");
  const char* op = "multi_margin_loss_backward";
  int64_t n = 0, c = 0;
  check_multi_margin_shapes(op, self, target, p, weight, n, c);
  check_device(op, grad_output);
  check_multi_margin_dtype(op, self);
  check_output(op, grad_input, self.scalar_type(), self.sizes(),
               {&grad_output, &self, &target, weight ? &*weight : nullptr});
  check_contiguous_output(grad_input, "grad_input");
  if (self.numel() == 0) {
    return grad_input;
  }
  MarginProblem problem = multi_margin_problem(op, self, target, margin, weight, n, c);
  TORCH_CHECK(grad_output.scalar_type() == self.scalar_type() && grad_input.scalar_type() == self.scalar_type(),
              "expected scalar type ", self.scalar_type(), " but found ", grad_output.scalar_type(), " and ",
              grad_input.scalar_type());
  const bool per_sample = check_loss_grad(op, grad_output, reduction, problem.n, /*exact=*/false);
  const at::Tensor grad = per_sample ? grad_output.narrow(0, 0, problem.n).contiguous()
                                     : grad_output.reshape({-1}).narrow(0, 0, 1).contiguous();
  problem.params.p = static_cast<int>(p.toLong());
  problem.params.grad_per_sample = per_sample;
  problem.params.scale = loss_grad_scale(reduction, problem.n, problem.c);
  const KernelHandle* kernel = kernels.get(Variant::reduce, at::kFloat, at::kFloat);
  KernelFunction function(kernel);
  // grad_input is contiguous (checked above, as the CPU checks it).
  function.bind_operands(grad_input, grad, problem.x, problem.target, problem.weight,
                         problem.bad_target);
  dispatch_per_sample_rows(function, kernel, problem);
  check_targets(op, problem);
  return grad_input;
}

at::Tensor multi_margin_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                      const at::Tensor& target, const at::Scalar& p,
                                      const at::Scalar& margin, const std::optional<at::Tensor>& weight,
                                      int64_t reduction) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return multi_margin_loss_backward_out(grad_output, self, target, p, margin, weight, reduction,
                                        grad_input);
}

namespace {

struct MultilabelProblem {
  int64_t n, c;
  at::Tensor x, target;  // (n, c), contiguous
};

// The CPU's order: shapes, (an empty input returns here: the caller), the
// target's range (read before its dtype is checked), input dtype, target dtype.
void check_multilabel_shapes(const char* op, const at::Tensor& self, const at::Tensor& target) {
  check_device(op, self);
  check_device(op, target);
  const int64_t ndims = self.dim();
  TORCH_CHECK((ndims == 2 && self.size(1) != 0) || (ndims == 1 && self.size(0) != 0) || ndims == 0,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              self.sizes());
  TORCH_CHECK(target.sizes() == self.sizes(), "inconsistent target size: ", target.sizes(),
              " for input of size: ", self.sizes());
}

// The CPU's order: target's values, then its dtype dispatch (a kernel for
// float only), then (inside the kernel) the outputs' dtypes.
void check_multilabel_values(const char* op, const at::Tensor& self, const at::Tensor& target) {
  const int64_t c = self.dim() == 0 ? 1 : self.size(-1);
  if (target.numel() > 0) {
    const auto [lo, hi] = value_range(target);
    TORCH_CHECK(lo >= -1 && hi < c, "argument #2 'target' is out of range");
  }
  check_dtype(op, self);
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() == at::kFloat, "\"", op, "_out_frame\" not implemented for '",
                              c10::toString(self.scalar_type()), "' on ", self.device());
}

MultilabelProblem multilabel_problem(const at::Tensor& self, const at::Tensor& target) {
  const int64_t n = self.dim() <= 1 ? 1 : self.size(0);
  const int64_t c = self.dim() == 0 ? 1 : self.size(-1);
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ",
              target.scalar_type());
  return MultilabelProblem{n, c, self.reshape({n, c}).contiguous(), target.reshape({n, c}).contiguous()};
}

}  // namespace

std::tuple<at::Tensor&, at::Tensor&> multilabel_margin_loss_forward_out(
    const at::Tensor& self, const at::Tensor& target, int64_t reduction, at::Tensor& output,
    at::Tensor& is_target) {
  static KernelCache kernels("multilabel_margin_loss");
  const char* op = "multilabel_margin_loss_forward";
  check_multilabel_shapes(op, self, target);
  // The CPU's shapes: per sample only for a 2-D input without reduction.
  const bool per_sample = reduction == at::Reduction::None && target.dim() > 1;
  check_multilabel_values(op, self, target);
  check_output(op, output, self.scalar_type(), per_sample ? at::IntArrayRef{self.size(0)} : at::IntArrayRef{},
               {&self, &target});
  check_output(op, is_target, self.scalar_type(), target.sizes(), {&self, &target, &output});
  check_contiguous_output(is_target, "is_target");
  if (self.numel() == 0) {
    is_target.zero_();
    output.fill_(reduction == at::Reduction::Mean ? std::numeric_limits<double>::quiet_NaN() : 0.0);
    return {output, is_target};
  }
  const MultilabelProblem problem = multilabel_problem(self, target);
  // Per-sample losses are written to output; others to scratch space first.
  // is_target is contiguous (checked above, as the CPU checks it).
  const ContiguousOutput losses(per_sample ? output : at::empty({problem.n}, self.options()));
  TORCH_CHECK(problem.n <= UINT32_MAX, "mps_ops: multilabel_margin_loss over more than 2**32 - 1 samples");
  const multilabel_margin_params params{0, problem.n, problem.c, 1.0f};
  const Dim3 group = per_sample_group(problem.c);
  KernelFunction function(kernels.get(Variant::reduce, at::kFloat, at::kFloat));
  function.bind_operands(losses.tensor, is_target, problem.x, problem.target).bind(params);
  function.dispatch(Dim3{group.x, static_cast<uint32_t>(problem.n), 1}, group);
  if (per_sample) {
    losses.copy_back();
  } else if (reduction == at::Reduction::None) {
    output.copy_(losses.tensor.view(at::IntArrayRef{}));  // one sample, as a 0-dim loss
  } else {
    reduce_losses(losses.tensor, reduction, output);
  }
  return {output, is_target};
}

std::tuple<at::Tensor, at::Tensor> multilabel_margin_loss_forward(const at::Tensor& self,
                                                                  const at::Tensor& target,
                                                                  int64_t reduction) {
  at::Tensor output = at::empty({0}, self.options()), is_target = at::empty({0}, self.options());
  multilabel_margin_loss_forward_out(self, target, reduction, output, is_target);
  return {output, is_target};
}

at::Tensor& multilabel_margin_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                                const at::Tensor& target, int64_t reduction,
                                                const at::Tensor& is_target, at::Tensor& grad_input) {
  static KernelCache kernels("multilabel_margin_loss_backward");
  const char* op = "multilabel_margin_loss_backward";
  check_multilabel_shapes(op, self, target);
  check_device(op, grad_output);
  check_device(op, is_target);
  TORCH_CHECK(is_target.sizes() == target.sizes(), "Expected tensor for argument #3 'target' to have same size "
              "as tensor for argument #5 'is_target'; but ", target.sizes(), " does not equal ",
              is_target.sizes());
  check_multilabel_values(op, self, target);
  check_output(op, grad_input, self.scalar_type(), self.sizes(), {&grad_output, &self, &target, &is_target});
  check_contiguous_output(grad_input, "grad_input");
  if (self.numel() == 0) {
    return grad_input;
  }
  const MultilabelProblem problem = multilabel_problem(self, target);
  // is_target is the forward's record, read as given: 0 marks a class not
  // listed (the CPU's test), and anything outside [0, 1] (NaN too) is refused.
  const auto [lowest, highest] = at::aminmax(is_target);
  TORCH_CHECK(lowest.item<double>() >= 0 && highest.item<double>() <= 1, "argument #5 'is_target' is out of range");
  TORCH_CHECK(is_target.scalar_type() == self.scalar_type() && grad_output.scalar_type() == self.scalar_type() &&
                  grad_input.scalar_type() == self.scalar_type(),
              "expected scalar type ", self.scalar_type(), " but found ", is_target.scalar_type(), ", ",
              grad_output.scalar_type(), " and ", grad_input.scalar_type());
  const bool per_sample = check_loss_grad(op, grad_output, reduction, problem.n, /*exact=*/true);
  TORCH_CHECK(problem.n <= UINT32_MAX && problem.c <= UINT32_MAX,
              "mps_ops: multilabel_margin_loss_backward grid too large");
  const at::Tensor grad = per_sample ? grad_output.narrow(0, 0, problem.n).contiguous()
                                     : grad_output.reshape({-1}).narrow(0, 0, 1).contiguous();
  const at::Tensor marks = is_target.reshape({problem.n, problem.c}).contiguous();
  const multilabel_margin_params params{per_sample, problem.n, problem.c,
                                        loss_grad_scale(reduction, problem.n, problem.c)};
  KernelFunction function(kernels.get(Variant::dense, at::kFloat, at::kFloat));
  // grad_input is contiguous (checked above, as the CPU checks it).
  function.bind_operands(grad_input, grad, problem.x, problem.target, marks).bind(params);
  function.dispatch(Dim3{static_cast<uint32_t>(problem.c), static_cast<uint32_t>(problem.n), 1});
  return grad_input;
}

at::Tensor multilabel_margin_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                           const at::Tensor& target, int64_t reduction,
                                           const at::Tensor& is_target) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return multilabel_margin_loss_backward_out(grad_output, self, target, reduction, is_target, grad_input);
}

}  // namespace mps_ops
