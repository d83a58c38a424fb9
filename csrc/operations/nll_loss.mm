// Host stubs of nll_loss_forward/backward and nll_loss2d_forward/backward
// (functional and out=): `override` ops, whose stock MPS kernels run
// MPSGraph up to torch 2.14 (2.15 ships native ones, so the registry leaves
// it alone). Kernels in csrc/kernels/nll_loss.metal. Both losses are one
// problem there: the input as (samples, classes, spatial), one target per
// (sample, position). Checks and messages are the CPU's, in its order.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/error_checks.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include "../kernels/nll_loss_params.h"

#include <ATen/core/Reduction.h>
#include <ATen/ops/empty.h>
#include <torch/version.h>

#include <algorithm>
#include <tuple>

namespace mps_ops {

namespace {

// From torch 2.13 on, the CPU's forwards check the target's dtype before the
// input's dtype dispatch ("expected target dtype to be Long or Byte"); up to
// 2.12 their kernels found it after, reading it as int64.
constexpr bool target_dtype_checked_first =
    TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 13);

// Threads per group of the reduced forward's first pass.
constexpr int64_t nll_group_threads = 256;

struct NllProblem {
  at::Tensor x;       // (samples, classes, spatial), contiguous
  at::Tensor target;  // (samples * spatial), contiguous, long or uint8
  at::Tensor weight;  // (classes), contiguous; x when none was given (not read)
  nll_loss_params params;
  KernelFlag bad_target;  // raised by the kernels: a target outside [0, classes)
};

void check_weight_classes(const std::optional<at::Tensor>& weight, int64_t classes, bool say_shape) {
  if (!weight || !weight->defined()) {
    return;
  }
  if (say_shape) {
    TORCH_CHECK(weight->dim() == 1 && weight->numel() == classes, "weight tensor should be defined either for all ",
                classes, " classes or no classes but got weight tensor of shape: ", weight->sizes());
  } else {
    TORCH_CHECK(weight->numel() == classes, "weight tensor should be defined either for all or no classes");
  }
}

// nll_loss's shapes (its meta functions): the input (samples, classes) or
// (classes,), the target (samples,) or 0-dim; the forward also takes a 1-D
// input with a target of one element (the backward does not).
void check_nll_shapes(const at::Tensor& self, const at::Tensor& target, bool forward) {
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
  TORCH_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
  if (forward && self.dim() == 1 && target.dim() == 1) {
    TORCH_CHECK_VALUE(target.size(0) == 1, "For 1D input, 1D target must have size 1, but got target size: ",
                      target.size(0));
    return;
  }
  const bool no_batch_dim = self.dim() == 1 && target.dim() == 0;
  TORCH_CHECK(no_batch_dim || self.size(0) == target.size(0), "size mismatch (got input: ", self.sizes(),
              ", target: ", target.sizes(), ")");
}

// nll_loss2d's shapes: the input (samples, classes, h, w), the target
// (samples, h, w).
void check_nll2d_shapes(const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight) {
  TORCH_CHECK(target.dim() == 3, "only batches of spatial targets supported (3D tensors) but got targets of "
              "dimension: ", target.dim());
  TORCH_CHECK(self.dim() == 4, "only batches of spatial inputs supported (4D tensors), but got input of "
              "dimension: ", self.dim());
  check_weight_classes(weight, self.size(1), false);
  TORCH_CHECK(self.size(0) == target.size(0) && self.size(2) == target.size(1) && self.size(3) == target.size(2),
              "size mismatch (got input: ", self.sizes(), " , target: ", target.sizes());
}

// The CPU's kernels' checks, after the shapes: the target's dtype and the
// input's dtype dispatch (in that order, with the newer message, from torch
// 2.13 on except in nll_loss_backward; the other way round, the kernel
// reading the target as int64, before 2.13 and in nll_loss_backward),
// nll_loss2d's long-only target (its kernel reads int64), then the weight's
// dtype (read as the input's).
void check_nll_dtypes(const char* op, const at::Tensor& self, const at::Tensor& target,
                      const std::optional<at::Tensor>& weight, bool target_first = target_dtype_checked_first) {
  const auto check_target = [&] {
    if (target_first) {
      TORCH_CHECK(target.scalar_type() == at::kLong || target.scalar_type() == at::kByte,
                  "expected target dtype to be Long or Byte, but got ", target.scalar_type());
    } else {
      TORCH_CHECK(target.scalar_type() == at::kLong || (target.scalar_type() == at::kByte && self.dim() < 4),
                  "expected scalar type Long but found ", target.scalar_type());
    }
  };
  if (target_first) {
    check_target();
  }
  check_dtype(op, self);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"", op, "_out_frame\" not implemented for '",
                              c10::toString(self.scalar_type()), "' on ", self.device());
  if (!target_first) {
    check_target();
  }
  if (self.dim() == 4) {
    TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ", target.scalar_type());
  }
  if (weight && weight->defined()) {
    TORCH_CHECK(weight->scalar_type() == self.scalar_type(), "expected scalar type ", self.scalar_type(),
                " but found ", weight->scalar_type());
  }
}


NllProblem nll_problem(const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight,
                       int64_t samples, int64_t classes, int64_t spatial, int64_t ignore_index) {
  const bool weighted = weight && weight->defined();
  at::Tensor x = self.reshape({samples, classes, spatial}).contiguous();
  at::Tensor weights = weighted ? weight->reshape({classes}).contiguous() : x;
  // Clamped: with no samples, spatial may pass 32 bits, and no kernel
  // divides by it.
  const fast_divisor by_spatial =
      make_fast_divisor(static_cast<unsigned>(std::clamp<int64_t>(spatial, 1, UINT32_MAX)));
  nll_loss_params params{classes, spatial, samples * spatial, ignore_index, 1, weighted ? 1 : 0, 0, 0, by_spatial};
  return NllProblem{std::move(x), target.reshape({samples * spatial}).contiguous(), std::move(weights), params,
                    KernelFlag()};
}

void check_targets(const char* op, NllProblem& problem) {
  check_flag(op, std::move(problem.bad_target),
             [classes = problem.params.classes, ignore_index = problem.params.ignore_index](const KernelFlag& flag) {
               // The CPU names the bad target; reading it back would cost another pass.
               TORCH_CHECK_INDEX(!flag.raised(), "Target out of bounds: a target is outside [0, ", classes,
                                 ") and is not ignore_index ", ignore_index);
             });
}

void check_position_count(const char* op, int64_t positions) {
  TORCH_CHECK(positions <= UINT32_MAX, "mps_ops: ", op, " over more than 2**32 - 1 targets");
}

// The forward into output (the target's shape for reduction none, else
// 0-dim: output_is_single) and total_weight (0-dim).
void nll_forward_into(const char* op, NllProblem& problem, int64_t reduction, bool output_is_single,
                      at::Tensor& output, at::Tensor& total_weight) {
  static KernelCache none_kernels("nll_loss");
  static KernelCache partial_kernels("nll_loss_partials");
  static KernelCache merge_kernels("nll_loss_merge");
  const c10::ScalarType dtype = problem.x.scalar_type(), target_dtype = problem.target.scalar_type();
  const int64_t positions = problem.params.positions;
  check_position_count(op, positions);
  // Per position only where the output has one element per position: a
  // 1-D input's unreduced loss is its one term, and total_weight its
  // weight, as the reduced path writes them (the CPU's scalar path).
  if (reduction == at::Reduction::None && !output_is_single) {
    total_weight.zero_();
    if (positions > 0) {
      const ContiguousOutput out(output);
      KernelFunction function(none_kernels.get(Variant::dense, target_dtype, dtype));
      function.bind_operands(out.tensor, problem.x, problem.target, problem.weight, problem.bad_target)
          .bind(problem.params);
      function.dispatch(Dim3{static_cast<uint32_t>(positions), 1, 1});
      out.copy_back();
    }
    check_targets(op, problem);
    return;
  }
  // Two passes: each group's chunk of positions, then the chunks in order.
  // Groups enough to fill a GPU (split_groups), down to one position per
  // thread: a position's two loads depend on each other (its target, then
  // its term), so a thread's positions are round trips in a row, and at 16
  // per thread nll_loss's 65536 targets ran on 16 groups (H200: 0.77x
  // torch's CUDA kernel). The merge pass reads two floats per group.
  const ChunkedPasses passes = chunked_passes(positions, nll_group_threads);
  const int64_t groups = passes.groups;
  problem.params.chunk = passes.chunk;
  problem.params.mean = reduction == at::Reduction::Mean ? 1 : 0;
  const at::Tensor partials = at::empty({groups, 2}, problem.x.options().dtype(at::kFloat));
  const KernelHandle* partial_kernel = partial_kernels.get(Variant::reduce, target_dtype, dtype);
  const uint32_t threads = static_cast<uint32_t>(
      std::min<int64_t>(nll_group_threads, backend().max_threads_per_group(partial_kernel)));
  KernelFunction first(partial_kernel);
  first.bind_operands(partials, problem.x, problem.target, problem.weight, problem.bad_target)
      .bind(problem.params);
  first.dispatch(Dim3{threads * static_cast<uint32_t>(groups), 1, 1}, Dim3{threads, 1, 1});
  const ContiguousOutput out(output), weight_sum(total_weight);
  const KernelHandle* total_kernel = merge_kernels.get(Variant::reduce, dtype, dtype);
  const uint32_t total_threads = merge_group_threads(groups, nll_group_threads, total_kernel);
  KernelFunction second(total_kernel);
  second.bind_operands(out.tensor, weight_sum.tensor, partials).bind(problem.params);
  second.dispatch(Dim3{total_threads, 1, 1}, Dim3{total_threads, 1, 1});
  out.copy_back();
  weight_sum.copy_back();
  check_targets(op, problem);
}

// The backward into grad_input (the input's shape). One spatial position
// (nll_loss): zero-filled, then one thread per sample; more (nll_loss2d):
// every element written once, a thread per position and chunk of classes
// (nll_loss.metal says why).
void nll_backward_into(const char* op, NllProblem& problem, const at::Tensor& grad_output, int64_t reduction,
                       const at::Tensor& total_weight, at::Tensor& grad_input) {
  static KernelCache scatter_kernels("nll_loss_backward");
  static KernelCache plane_kernels("nll_loss_backward_planes");
  const ContiguousOutput target(grad_input);
  const int64_t positions = problem.params.positions;
  check_position_count(op, positions);
  const bool planes = problem.params.spatial > 1;
  if (!planes || positions == 0) {
    target.tensor.zero_();
  }
  if (positions > 0) {
    problem.params.mean = reduction == at::Reduction::Mean ? 1 : 0;
    problem.params.grad_per_position = reduction == at::Reduction::None && grad_output.dim() > 0 ? 1 : 0;
    const at::Tensor grad = grad_output.contiguous();
    KernelFunction function((planes ? plane_kernels : scatter_kernels)
                                .get(Variant::dense, problem.target.scalar_type(), problem.x.scalar_type()));
    function
        .bind_operands(target.tensor, grad, problem.target, problem.weight, total_weight.contiguous(),
                       problem.bad_target)
        .bind(problem.params);
    // At least one chunk: with no classes every target is out of range, and
    // its thread raises bad_target.
    const int64_t chunks =
        std::max<int64_t>(1, (problem.params.classes + nll_classes_per_thread - 1) / nll_classes_per_thread);
    function.dispatch(Dim3{static_cast<uint32_t>(positions), planes ? static_cast<uint32_t>(chunks) : 1, 1});
  }
  target.copy_back();
  check_targets(op, problem);
}

// The backwards' grad_output and total_weight: read as the input's dtype
// (total_weight only by a mean or sum, which read it).
void check_backward_dtypes(const at::Tensor& self, const at::Tensor& grad_output, const at::Tensor& total_weight,
                           int64_t reduction) {
  TORCH_CHECK(grad_output.scalar_type() == self.scalar_type(), "expected scalar type ", self.scalar_type(),
              " but found ", grad_output.scalar_type());
  TORCH_CHECK(reduction == at::Reduction::None || total_weight.scalar_type() == self.scalar_type(),
              "expected scalar type ", self.scalar_type(), " but found ", total_weight.scalar_type());
}

void check_total_weight(const at::Tensor& total_weight) {
  TORCH_CHECK(total_weight.numel() == 1, "expected total_weight to be a  single element tensor, got: ",
              total_weight.sizes(), " (", total_weight.numel(), " elements)");
}

}  // namespace

std::tuple<at::Tensor&, at::Tensor&> nll_loss_forward_output(const at::Tensor& self, const at::Tensor& target,
                                                          const std::optional<at::Tensor>& weight,
                                                          int64_t reduction, int64_t ignore_index,
                                                          at::Tensor& output, at::Tensor& total_weight) {
  const char* op = "nll_loss";
  check_devices(op, {&self, &target, optional_pointer(weight)});
  check_nll_shapes(self, target, true);
  const int64_t classes = self.size(-1);
  check_weight_classes(weight, classes, true);
  const bool per_sample = reduction == at::Reduction::None && self.dim() == 2;
  check_output(op, output, self.scalar_type(), per_sample ? at::IntArrayRef{self.size(0)} : at::IntArrayRef{},
               {&self, &target, optional_pointer(weight)});
  check_output(op, total_weight, self.scalar_type(), {}, {&self, &target, optional_pointer(weight), &output});
  check_nll_dtypes(op, self, target, weight);
  const int64_t samples = self.dim() == 1 ? 1 : self.size(0);
  NllProblem problem = nll_problem(self, target, weight, samples, classes, 1, ignore_index);
  nll_forward_into(op, problem, reduction, !per_sample, output, total_weight);
  return {output, total_weight};
}

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight, int64_t reduction,
                                                    int64_t ignore_index) {
  at::Tensor output = at::empty({0}, self.options());
  at::Tensor total_weight = at::empty({0}, self.options());
  nll_loss_forward_output(self, target, weight, reduction, ignore_index, output, total_weight);
  return {output, total_weight};
}

at::Tensor& nll_loss_backward_grad_input(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                  const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                                  const at::Tensor& total_weight, at::Tensor& grad_input) {
  const char* op = "nll_loss_backward";
  check_devices(op, {&grad_output, &self, &target, optional_pointer(weight), &total_weight});
  check_nll_shapes(self, target, false);
  check_total_weight(total_weight);
  check_weight_classes(weight, self.size(-1), false);
  if (reduction == at::Reduction::None && self.dim() == 2) {
    TORCH_CHECK_INDEX(grad_output.dim() > 0, "Dimension specified as 0 but tensor has no dimensions");
    TORCH_CHECK(grad_output.dim() == 1 && grad_output.size(0) == self.size(0), "Expected a tensor of dimension 1 "
                "and tensor.size[0] == ", self.size(0), " but got: dimension ", grad_output.dim(),
                " and tensor.size[0] = ", grad_output.dim() > 0 ? grad_output.size(0) : 1);
  } else {
    TORCH_CHECK(grad_output.dim() <= 1 && grad_output.numel() == 1,
                "Expected a single element grad_output tensor, but got: ", grad_output.sizes());
  }
  check_output(op, grad_input, self.scalar_type(), self.sizes(),
               {&grad_output, &self, &target, optional_pointer(weight), &total_weight});
  check_nll_dtypes("nll_loss_backward", self, target, weight, false);
  check_backward_dtypes(self, grad_output, total_weight, reduction);
  const int64_t samples = self.dim() == 1 ? 1 : self.size(0);
  NllProblem problem = nll_problem(self, target, weight, samples, self.size(-1), 1, ignore_index);
  nll_backward_into(op, problem, grad_output, reduction, total_weight, grad_input);
  return grad_input;
}

at::Tensor nll_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return nll_loss_backward_grad_input(grad_output, self, target, weight, reduction, ignore_index, total_weight, grad_input);
}

std::tuple<at::Tensor&, at::Tensor&> nll_loss2d_forward_output(const at::Tensor& self, const at::Tensor& target,
                                                            const std::optional<at::Tensor>& weight,
                                                            int64_t reduction, int64_t ignore_index,
                                                            at::Tensor& output, at::Tensor& total_weight) {
  const char* op = "nll_loss2d";
  check_devices(op, {&self, &target, optional_pointer(weight)});
  check_nll2d_shapes(self, target, weight);
  // A legacy kernel (no meta function): the dtypes before the outputs.
  check_nll_dtypes("nll_loss2d_forward", self, target, weight);
  const bool per_position = reduction == at::Reduction::None;
  check_output(op, output, self.scalar_type(), per_position ? target.sizes() : at::IntArrayRef{},
               {&self, &target, optional_pointer(weight)});
  check_output(op, total_weight, self.scalar_type(), {}, {&self, &target, optional_pointer(weight), &output});
  NllProblem problem = nll_problem(self, target, weight, self.size(0), self.size(1), self.size(2) * self.size(3),
                                   ignore_index);
  nll_forward_into(op, problem, reduction, !per_position, output, total_weight);
  return {output, total_weight};
}

std::tuple<at::Tensor, at::Tensor> nll_loss2d_forward(const at::Tensor& self, const at::Tensor& target,
                                                      const std::optional<at::Tensor>& weight, int64_t reduction,
                                                      int64_t ignore_index) {
  at::Tensor output = at::empty({0}, self.options());
  at::Tensor total_weight = at::empty({0}, self.options());
  nll_loss2d_forward_output(self, target, weight, reduction, ignore_index, output, total_weight);
  return {output, total_weight};
}

at::Tensor& nll_loss2d_backward_grad_input(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                    const std::optional<at::Tensor>& weight, int64_t reduction,
                                    int64_t ignore_index, const at::Tensor& total_weight, at::Tensor& grad_input) {
  const char* op = "nll_loss2d_backward";
  check_devices(op, {&grad_output, &self, &target, optional_pointer(weight), &total_weight});
  check_nll2d_shapes(self, target, weight);
  check_total_weight(total_weight);
  if (reduction == at::Reduction::None) {
    TORCH_CHECK(grad_output.dim() == 3, "grad_output must have same dimension as target (3) but got dimension: ",
                grad_output.sizes());
    TORCH_CHECK(grad_output.sizes() == target.sizes(), "size mismatch (got grad_output: ", grad_output.sizes(),
                " target: ", target.sizes());
  } else {
    TORCH_CHECK(grad_output.dim() <= 1 && grad_output.numel() == 1,
                "Expected a single element grad_output tensor, but got: ", grad_output.sizes());
  }
  check_nll_dtypes("nll_loss2d_backward", self, target, weight);
  check_backward_dtypes(self, grad_output, total_weight, reduction);
  check_output(op, grad_input, self.scalar_type(), self.sizes(),
               {&grad_output, &self, &target, optional_pointer(weight), &total_weight});
  // The CPU's kernel writes through a raw pointer. (Its functional form
  // makes grad_input like self, so a permuted self is refused too; ours
  // makes it contiguous, as torch's MPS kernel does.)
  check_contiguous_output(grad_input, "grad_input");
  NllProblem problem = nll_problem(self, target, weight, self.size(0), self.size(1), self.size(2) * self.size(3),
                                   ignore_index);
  nll_backward_into(op, problem, grad_output, reduction, total_weight, grad_input);
  return grad_input;
}

at::Tensor nll_loss2d_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                               const at::Tensor& total_weight) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return nll_loss2d_backward_grad_input(grad_output, self, target, weight, reduction, ignore_index, total_weight,
                                 grad_input);
}

}  // namespace mps_ops
