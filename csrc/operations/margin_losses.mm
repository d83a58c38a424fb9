// Host stubs of multi_margin_loss and multilabel_margin_loss, each with its
// backward (functional and out=);
// kernels in csrc/kernels/margin_losses.metal, the mean/sum pass in
// csrc/kernels/sum.metal. Checks and messages are the CPU's; float32 only,
// as the CPU computes these losses only in float and double.
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include "../kernels/include/mps_ops/params.h"

#include <ATen/core/Reduction.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>

namespace mps_ops {

namespace {

// Every element of a long target must lie in [lowest, c).
void check_target_range(const at::Tensor& target, int64_t lowest, int64_t c, const char* message) {
  if (target.numel() == 0) {
    return;
  }
  const auto [lo, hi] = value_range(target);
  TORCH_CHECK(lo >= lowest && hi < c, message);
}

// A backward's grad_output: one element per sample without reduction, else
// one in all. Returns whether it is per sample.
bool check_loss_grad(const char* op, const at::Tensor& grad_output, int64_t reduction, int64_t samples) {
  const bool per_sample = reduction == at::Reduction::None;
  TORCH_CHECK(per_sample ? grad_output.numel() == samples : grad_output.numel() == 1, op,
              ": expected grad_output of ", per_sample ? samples : 1, " elements but got ", grad_output.sizes());
  return per_sample;
}

struct MarginProblem {
  int64_t n;          // samples
  int64_t c;          // classes
  at::Tensor x;       // (n, c), contiguous
  at::Tensor target;  // (n,), contiguous
  at::Tensor weight;  // (c,), contiguous (ones when none was given)
  multi_margin_params params;
};

MarginProblem multi_margin_problem(const char* op, const at::Tensor& self, const at::Tensor& target,
                                   const at::Scalar& p, const at::Scalar& margin,
                                   const std::optional<at::Tensor>& weight) {
  check_device(op, self);
  check_device(op, target);
  check_dtype(op, self);
  TORCH_CHECK_VALUE(p.toLong() == 1 || p.toLong() == 2, "only p == 1 and p == 2 supported");
  const int64_t ndims = self.dim();
  TORCH_CHECK((ndims == 2 && self.size(1) != 0) || (ndims == 1 && self.size(0) != 0) || ndims == 0,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              self.sizes());
  const int64_t n = ndims <= 1 ? 1 : self.size(0);
  const int64_t c = ndims == 0 ? 1 : self.size(-1);
  TORCH_CHECK(target.dim() <= 1 && target.numel() == n, op,
              ": target tensor should be 1-D with size equal to the number of input samples (batch "
              "size). Expected target size [", n, "], but got ", target.sizes(), ". Input has shape ",
              self.sizes(), ".");
  const bool has_weight = weight && weight->defined();
  if (has_weight) {
    check_device(op, *weight);
    TORCH_CHECK(weight->dim() <= 1 && weight->numel() == c, "inconsistent weight size, expected ", c,
                " but got ", weight->sizes());
    TORCH_CHECK(weight->scalar_type() == self.scalar_type(), "expected scalar type ",
                self.scalar_type(), " but found ", weight->scalar_type());
  }
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ",
              target.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() == at::kFloat, "\"", op,
                              "_cpu_kernel\" not implemented for '", c10::toString(self.scalar_type()),
                              "' on ", self.device());
  check_target_range(target, 0, c, "target out of range");
  MarginProblem problem{n, c, self.reshape({n, c}).contiguous(), target.reshape({n}).contiguous(),
                        has_weight ? weight->reshape({c}).contiguous() : at::ones({c}, self.options()),
                        {}};
  problem.params = multi_margin_params{static_cast<float>(margin.toDouble()),
                                       static_cast<int>(p.toLong()), 0, n, c, 1.0f};
  return problem;
}

// One threadgroup per sample: a multiple of the SIMD width, at most 256.
Dim3 per_sample_group(int64_t c) {
  return Dim3{static_cast<uint32_t>(std::min<int64_t>(256, (c + 31) / 32 * 32)), 1, 1};
}

// mean / sum of per-sample losses into out (0-dim): one more reduction pass.
void reduce_losses(const at::Tensor& losses, int64_t reduction, at::Tensor& out) {
  static KernelCache sum_kernels("sum");
  at::Tensor total = out.is_contiguous() ? out : at::empty({}, losses.options());
  // The mean over no samples is 0 * inf: NaN.
  const sum_params scale{reduction == at::Reduction::Mean ? 1.0f / static_cast<float>(losses.numel())
                                                          : 1.0f};
  dispatch_reduction(sum_kernels.get(Variant::reduce, at::kFloat, at::kFloat), {&total}, losses,
                     plan_reduction(losses, {}), &scale, sizeof(scale));
  if (!total.is_same(out)) {
    out.copy_(total);
  }
}

}  // namespace

at::Tensor& multi_margin_loss_out(const at::Tensor& self, const at::Tensor& target,
                                  const at::Scalar& p, const at::Scalar& margin,
                                  const std::optional<at::Tensor>& weight, int64_t reduction,
                                  at::Tensor& out) {
  static KernelCache loss_kernels("multi_margin_loss");
  MarginProblem problem = multi_margin_problem("multi_margin_loss", self, target, p, margin, weight);
  const bool per_sample = reduction == at::Reduction::None;
  check_output("multi_margin_loss", out, at::kFloat,
               per_sample ? (self.dim() <= 1 ? target.sizes() : at::IntArrayRef{problem.n}) : at::IntArrayRef{},
               {&self, &target, weight ? &*weight : nullptr});
  at::Tensor losses = per_sample && out.is_contiguous() ? out : at::empty({problem.n}, self.options());
  if (problem.n > 0) {
    TORCH_CHECK(problem.n <= UINT32_MAX, "mps_ops: multi_margin_loss over more than 2**32 - 1 samples");
    const Dim3 group = per_sample_group(problem.c);
    KernelFunction function(loss_kernels.get(Variant::reduce, at::kFloat, at::kFloat));
    function.set_operands({&losses, &problem.x, &problem.target, &problem.weight});
    function.set_value(4, problem.params);
    function.dispatch(Dim3{group.x, static_cast<uint32_t>(problem.n), 1}, group);
  }
  if (per_sample) {
    if (!losses.is_same(out)) {
      out.copy_(losses.view(out.sizes()));
    }
    return out;
  }
  reduce_losses(losses, reduction, out);
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
  MarginProblem problem =
      multi_margin_problem("multi_margin_loss_backward", self, target, p, margin, weight);
  check_device("multi_margin_loss_backward", grad_output);
  const bool per_sample = check_loss_grad("multi_margin_loss_backward", grad_output, reduction, problem.n);
  TORCH_CHECK(grad_output.scalar_type() == at::kFloat,
              "multi_margin_loss_backward: expected float grad_output");
  check_output("multi_margin_loss_backward", grad_input, at::kFloat, self.sizes(),
               {&grad_output, &self, &target, weight ? &*weight : nullptr});
  check_contiguous_output(grad_input, "grad_input");
  at::Tensor& target_grad = grad_input;
  if (problem.n > 0) {
    const at::Tensor grad = grad_output.reshape({-1}).contiguous();
    problem.params.grad_per_sample = per_sample;
    problem.params.scale = 1.0f / static_cast<float>(problem.c) /
                           (reduction == at::Reduction::Mean ? static_cast<float>(problem.n) : 1.0f);
    const Dim3 group = per_sample_group(problem.c);
    KernelFunction function(kernels.get(Variant::reduce, at::kFloat, at::kFloat));
    function.set_operands({&target_grad, &grad, &problem.x, &problem.target, &problem.weight});
    function.set_value(5, problem.params);
    function.dispatch(Dim3{group.x, static_cast<uint32_t>(problem.n), 1}, group);
  }
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
  at::Tensor x, target;             // (n, c), contiguous
  std::vector<int64_t> loss_shape;  // for reduction none
};

MultilabelProblem multilabel_problem(const char* op, const at::Tensor& self, const at::Tensor& target) {
  check_device(op, self);
  check_device(op, target);
  check_dtype(op, self);
  const int64_t ndims = self.dim();
  TORCH_CHECK((ndims == 2 && self.size(1) != 0) || (ndims == 1 && self.size(0) != 0) || ndims == 0,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              self.sizes());
  TORCH_CHECK(target.sizes() == self.sizes(), "inconsistent target size: ", target.sizes(),
              " for input of size: ", self.sizes());
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ",
              target.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() == at::kFloat,
                              "\"multilabel_margin_loss_forward_out_frame\" not implemented for '",
                              c10::toString(self.scalar_type()), "' on ", self.device());
  const int64_t n = ndims <= 1 ? 1 : self.size(0);
  const int64_t c = ndims == 0 ? 1 : self.size(-1);
  check_target_range(target, -1, c, "argument #2 'target' is out of range");
  return MultilabelProblem{n, c, self.reshape({n, c}).contiguous(), target.reshape({n, c}).contiguous(),
                           ndims <= 1 ? std::vector<int64_t>{} : std::vector<int64_t>{n}};
}

}  // namespace

std::tuple<at::Tensor&, at::Tensor&> multilabel_margin_loss_forward_out(
    const at::Tensor& self, const at::Tensor& target, int64_t reduction, at::Tensor& output,
    at::Tensor& is_target) {
  static KernelCache kernels("multilabel_margin_loss");
  const MultilabelProblem problem = multilabel_problem("multilabel_margin_loss", self, target);
  const bool per_sample = reduction == at::Reduction::None;
  check_output("multilabel_margin_loss", output, at::kFloat,
               per_sample ? at::IntArrayRef(problem.loss_shape) : at::IntArrayRef{}, {&self, &target});
  check_output("multilabel_margin_loss", is_target, at::kFloat, self.sizes(), {&self, &target, &output});
  check_contiguous_output(is_target, "is_target");
  at::Tensor losses = per_sample && output.is_contiguous() ? output : at::empty({problem.n}, self.options());
  at::Tensor& marks = is_target;
  if (problem.n > 0) {
    TORCH_CHECK(problem.n <= UINT32_MAX, "mps_ops: multilabel_margin_loss over more than 2**32 - 1 samples");
    const multilabel_margin_params params{0, problem.n, problem.c, 1.0f};
    const Dim3 group = per_sample_group(problem.c);
    KernelFunction function(kernels.get(Variant::reduce, at::kFloat, at::kFloat));
    function.set_operands({&losses, &marks, &problem.x, &problem.target});
    function.set_value(4, params);
    function.dispatch(Dim3{group.x, static_cast<uint32_t>(problem.n), 1}, group);
  }
  if (per_sample) {
    if (!losses.is_same(output)) {
      output.copy_(losses.view(output.sizes()));
    }
  } else {
    reduce_losses(losses, reduction, output);
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
  const MultilabelProblem problem = multilabel_problem("multilabel_margin_loss_backward", self, target);
  check_device("multilabel_margin_loss_backward", grad_output);
  check_device("multilabel_margin_loss_backward", is_target);
  const bool per_sample = check_loss_grad("multilabel_margin_loss_backward", grad_output, reduction, problem.n);
  TORCH_CHECK(is_target.sizes() == self.sizes(), "inconsistent is_target size: ", is_target.sizes(),
              " for input of size: ", self.sizes());
  TORCH_CHECK(grad_output.scalar_type() == at::kFloat && is_target.scalar_type() == at::kFloat,
              "multilabel_margin_loss_backward: expected float grad_output and is_target");
  check_output("multilabel_margin_loss_backward", grad_input, at::kFloat, self.sizes(),
               {&grad_output, &self, &target, &is_target});
  check_contiguous_output(grad_input, "grad_input");
  at::Tensor& result = grad_input;
  if (problem.n > 0) {
    TORCH_CHECK(problem.n <= UINT32_MAX && problem.c <= UINT32_MAX,
                "mps_ops: multilabel_margin_loss_backward grid too large");
    const at::Tensor grad = grad_output.reshape({-1}).contiguous();
    const at::Tensor marks = is_target.reshape({problem.n, problem.c}).contiguous();
    const multilabel_margin_params params{
        per_sample, problem.n, problem.c,
        1.0f / static_cast<float>(problem.c) /
            (reduction == at::Reduction::Mean ? static_cast<float>(problem.n) : 1.0f)};
    KernelFunction function(kernels.get(Variant::dense, at::kFloat, at::kFloat));
    function.set_operands({&result, &grad, &problem.x, &problem.target, &marks});
    function.set_value(5, params);
    function.dispatch(Dim3{static_cast<uint32_t>(problem.c), static_cast<uint32_t>(problem.n), 1});
  }
  return grad_input;
}

at::Tensor multilabel_margin_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                           const at::Tensor& target, int64_t reduction,
                                           const at::Tensor& is_target) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return multilabel_margin_loss_backward_out(grad_output, self, target, reduction, is_target, grad_input);
}

}  // namespace mps_ops
