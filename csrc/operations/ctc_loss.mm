// Host stubs of _ctc_loss and _ctc_loss_backward (and their .Tensor forms):
// `fill` ops (torch 2.9 to 2.13 have no MPS kernel for them, so nn.CTCLoss
// and F.ctc_loss raised on a Mac). Kernels in csrc/kernels/ctc_loss.metal.
// Checks and messages are the CPU's (LossCTC.cpp's
// ctc_loss_allocate_outputs), in its order; the backward, which the CPU
// leaves unchecked ("assume that the forward did"), runs them too, and
// checks the forward's outputs it is handed, so nothing is read past them.
#include "../runtime/error_checks.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_flag.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include "../kernels/ctc_loss_params.h"

#include <ATen/TensorUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>

#include <algorithm>
#include <tuple>
#include <vector>

namespace mps_ops {

namespace {

constexpr const char* ctc_op = "_ctc_loss";
constexpr const char* ctc_backward_op = "_ctc_loss_backward";
// The threads of a recursion's threadgroup, at most: a target of up to 511
// elements (1,023 states) takes one state per thread, so a time step costs
// one state's latency (256 threads with two states each: the H200's
// forward at 0.60x torch's CUDA kernel, whose blocks also hold one state per
// thread). The other kernels' groups (a row of classes, the state table)
// take at most 256.
constexpr uint32_t ctc_recursion_threads = 1024;
constexpr uint32_t ctc_row_threads = 256;
// The longest target: its 2 x length + 1 states fit the kernels' int.
constexpr int64_t ctc_max_target_length = (INT32_MAX - 1) / 2;

// One call's batch entries as the kernels read them, and the sizes.
struct CtcProblem {
  at::Tensor lengths;  // (batch, ctc_length_fields) int64 on the device
  ctc_loss_params params;
};

// The CPU's dtype dispatch: log_probs' dtype (float32 here, as Metal has no
// float64).
void check_log_probs_dtype(const char* op, const char* cpu_name, const at::Tensor& log_probs) {
  check_dtype(op, log_probs);
  TORCH_CHECK_NOT_IMPLEMENTED(log_probs.scalar_type() == at::kFloat, "\"", cpu_name, "\" not implemented for '",
                              c10::toString(log_probs.scalar_type()), "' on ", log_probs.device());
}

// Then the targets' (Long, else Int).
void check_targets_dtype(const at::Tensor& targets) {
  if (targets.scalar_type() != at::kLong) {
    at::checkScalarType("ctc_loss_allocate_outputs", at::TensorArg(targets, "targets", 2), at::kInt);
  }
}

// ctc_loss_allocate_outputs's checks, in its order, and the lengths table.
CtcProblem ctc_problem(const at::Tensor& log_probs, const at::Tensor& targets, at::IntArrayRef input_lengths,
                       at::IntArrayRef target_lengths, int64_t blank, bool zero_infinity) {
  const at::CheckedFrom c = "ctc_loss_allocate_outputs";
  const at::TensorArg log_probs_arg(log_probs, "log_probs", 1), targets_arg(targets, "targets", 2);
  at::checkDim(c, log_probs_arg, 3);
  at::checkDimRange(c, targets_arg, 1, 3);
  const int64_t batch = log_probs.size(1), classes = log_probs.size(2);
  TORCH_CHECK(0 <= blank && blank < classes, "blank must be in label range");
  TORCH_CHECK(static_cast<int64_t>(input_lengths.size()) == batch, "input_lengths must be of size batch_size");
  TORCH_CHECK(static_cast<int64_t>(target_lengths.size()) == batch, "target_lengths must be of size batch_size");
  at::Tensor lengths = at::empty({batch, ctc_length_fields}, at::TensorOptions().dtype(at::kLong));
  int64_t* entry = lengths.data_ptr<int64_t>();
  int64_t max_target_length = 0, position = 0;
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK(target_lengths[b] >= 0, "Expected target_lengths to have value at least ", 0, ", but got value ",
                target_lengths[b], " (while checking arguments for ", c, ")");
    // The kernels number states (2 x length + 1) in int; a longer target
    // would also let the length sums wrap (the CPU's then pass its size
    // check and read past the targets).
    TORCH_CHECK(target_lengths[b] <= ctc_max_target_length, "mps_ops: ", c, ": a target of ", target_lengths[b],
                " elements, more than ", ctc_max_target_length);
    max_target_length = std::max(max_target_length, target_lengths[b]);
    entry[b * ctc_length_fields + ctc_target_length] = target_lengths[b];
    // Concatenated targets: the entry starts after the ones before it, in
    // elements (the CPU counts it in strides' units: wrong for a strided
    // 1-D targets tensor); padded ones: at its row.
    entry[b * ctc_length_fields + ctc_target_offset] =
        targets.dim() == 1 ? position * targets.stride(0) : b * targets.stride(0);
    position += target_lengths[b];
  }
  if (targets.dim() == 1) {
    at::checkSize(c, targets_arg, 0, position);
  } else {
    at::checkSize(c, targets_arg, 0, batch);
    TORCH_CHECK(targets.size(1) >= max_target_length, "Expected tensor to have size at least ", max_target_length,
                " at dimension 1, but got size ", targets.size(1), " for ", targets_arg,
                " (while checking arguments for ", c, ")");
  }
  const int64_t time = log_probs.size(0);
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK(input_lengths[b] >= 0, "Expected input_lengths to have value at least ", 0, ", but got value ",
                input_lengths[b], " (while checking arguments for ", c, ")");
    TORCH_CHECK(input_lengths[b] <= time, "Expected input_lengths to have value at most ", time, ", but got value ",
                input_lengths[b], " (while checking arguments for ", c, ")");
    entry[b * ctc_length_fields + ctc_input_length] = input_lengths[b];
  }
  ctc_loss_params params{};
  params.time = time;
  params.batch = batch;
  params.classes = classes;
  params.states = 2 * max_target_length + 1;
  params.blank = blank;
  params.target_stride = targets.dim() == 1 ? targets.stride(0) : targets.stride(1);
  params.zero_infinity = zero_infinity ? 1 : 0;
  return CtcProblem{lengths.to(log_probs.device()), params};
}

// `groups` threadgroups of `function`, each of a power of two of threads
// for `work` items (power_of_two_group: at most `cap` and the pipeline's
// limit).
void dispatch_groups(KernelFunction& function, const KernelHandle* kernel, int64_t groups, int64_t work,
                     uint32_t cap, const char* op) {
  const uint32_t threads = power_of_two_group(work, cap, kernel);
  TORCH_CHECK(groups * threads <= UINT32_MAX, "mps_ops: ", op, " over more than 2**32 - 1 threads");
  function.dispatch(Dim3{static_cast<uint32_t>(groups) * threads, 1, 1}, Dim3{threads, 1, 1});
}

void check_targets_in_range(const char* op, KernelFlag flag, int64_t classes) {
  check_flag(op, std::move(flag), [op, classes](const KernelFlag& raised) {
    TORCH_CHECK(!raised.raised(), op, ": a target is outside [0, ", classes, ") (the number of classes)");
  });
}

// The forward's outputs handed to the backward, as the forward makes them
// (the CPU reads them unchecked).
void check_forward_outputs(const at::Tensor& grad, const at::Tensor& log_probs, const at::Tensor& neg_log_likelihood,
                           const at::Tensor& log_alpha, const ctc_loss_params& p) {
  for (const at::Tensor* t : {&grad, &neg_log_likelihood, &log_alpha}) {
    TORCH_CHECK(t->scalar_type() == log_probs.scalar_type(), "expected scalar type ", log_probs.scalar_type(),
                " but found ", t->scalar_type(), " (", ctc_backward_op, " on ", log_probs.device(), ")");
  }
  for (const at::Tensor* t : {&grad, &neg_log_likelihood}) {
    TORCH_CHECK(t->dim() == 1 && t->size(0) == p.batch, ctc_backward_op, ": expected a loss and its gradient of size [",
                p.batch, "], got ", t->sizes());
  }
  TORCH_CHECK(log_alpha.dim() == 3 && log_alpha.size(0) == p.batch && log_alpha.size(1) == p.time &&
                  log_alpha.size(2) >= p.states,
              ctc_backward_op, ": expected log_alpha of size [", p.batch, ", ", p.time, ", ", p.states,
              "] (or more states), got ", log_alpha.sizes());
}

std::vector<int64_t> lengths_on_host(const at::Tensor& lengths, const char* name) {
  TORCH_CHECK(at::isIntegralType(lengths.scalar_type(), /*includeBool=*/false), name, " must be integral");
  return read_back({lengths});
}

// The state table of the kernels (ctc_loss_params.h), from ctc_loss_states;
// it raises bad_target for a target outside the classes.
at::Tensor state_table(const char* op, const at::Tensor& targets, const CtcProblem& problem, KernelFlag& bad_target) {
  static KernelCache kernels("ctc_loss_states");
  const ctc_loss_params& p = problem.params;
  const auto ints = problem.lengths.options().dtype(at::kInt);
  at::Tensor table = at::empty({p.batch, ctc_state_rows, p.states}, ints);
  at::Tensor last_state = at::empty({p.batch, p.classes}, ints);
  const KernelHandle* kernel = kernels.get(Variant::dense, targets.scalar_type(), at::kFloat);
  KernelFunction function(kernel);
  function.bind_operands(table, last_state, targets, problem.lengths).bind(p, bad_target);
  dispatch_groups(function, kernel, p.batch, std::max(p.states, p.classes), ctc_row_threads, op);
  return table;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> _ctc_loss(const at::Tensor& log_probs, const at::Tensor& targets,
                                             at::IntArrayRef input_lengths, at::IntArrayRef target_lengths,
                                             int64_t blank, bool zero_infinity) {
  static KernelCache kernels("ctc_loss_alpha");
  check_devices(ctc_op, {&log_probs, &targets});
  check_log_probs_dtype(ctc_op, "ctc_loss_cpu", log_probs);
  TORCH_CHECK(log_probs.numel() > 0, "log_probs tensor must not be empty");  // the forward's alone
  check_targets_dtype(targets);
  CtcProblem problem = ctc_problem(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity);
  const ctc_loss_params& p = problem.params;
  const auto options = log_probs.options().memory_format(at::MemoryFormat::Contiguous);
  at::Tensor neg_log_likelihood = at::empty({p.batch}, options);
  at::Tensor log_alpha = at::empty({p.batch, p.time, p.states}, options);
  KernelFlag bad_target;
  const at::Tensor table = state_table(ctc_op, targets, problem, bad_target);
  const KernelHandle* kernel = kernels.get(Variant::dense, at::kFloat, at::kFloat);
  KernelFunction function(kernel);
  function.bind_operands(log_alpha, neg_log_likelihood, log_probs.contiguous(), table, problem.lengths).bind(p);
  dispatch_groups(function, kernel, p.batch, p.states, ctc_recursion_threads, ctc_op);
  check_targets_in_range(ctc_op, std::move(bad_target), p.classes);
  return {neg_log_likelihood, log_alpha};
}

std::tuple<at::Tensor, at::Tensor> _ctc_loss_Tensor(const at::Tensor& log_probs, const at::Tensor& targets,
                                                    const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                                                    int64_t blank, bool zero_infinity) {
  const std::vector<int64_t> inputs = lengths_on_host(input_lengths, "input_lengths");
  const std::vector<int64_t> target_sizes = lengths_on_host(target_lengths, "target_lengths");
  return mps_ops::_ctc_loss(log_probs, targets, inputs, target_sizes, blank, zero_infinity);
}

at::Tensor _ctc_loss_backward(const at::Tensor& grad, const at::Tensor& log_probs, const at::Tensor& targets,
                              at::IntArrayRef input_lengths, at::IntArrayRef target_lengths,
                              const at::Tensor& neg_log_likelihood, const at::Tensor& log_alpha, int64_t blank,
                              bool zero_infinity) {
  static KernelCache beta_kernels("ctc_loss_beta");
  static KernelCache gradient_kernels("ctc_loss_gradient");
  check_devices(ctc_backward_op, {&grad, &log_probs, &targets, &neg_log_likelihood, &log_alpha});
  check_log_probs_dtype(ctc_backward_op, "ctc_loss_backward_cpu", log_probs);
  for (int64_t dim = 0; dim < 3; ++dim) {
    (void)log_probs.size(dim);  // the CPU's backward reads these first: IndexError for fewer dims
  }
  check_targets_dtype(targets);
  CtcProblem problem = ctc_problem(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity);
  ctc_loss_params& p = problem.params;
  check_forward_outputs(grad, log_probs, neg_log_likelihood, log_alpha, p);
  p.states = log_alpha.size(2);
  at::Tensor gradient = at::empty(log_probs.sizes(), log_probs.options().memory_format(at::MemoryFormat::Contiguous));
  if (gradient.numel() == 0) {
    return gradient;
  }
  const at::Tensor probs = log_probs.contiguous(), alpha = log_alpha.contiguous();
  const at::Tensor nll = neg_log_likelihood.contiguous();
  at::Tensor log_beta = at::empty_like(alpha, at::MemoryFormat::Contiguous);
  KernelFlag bad_target;
  const at::Tensor table = state_table(ctc_backward_op, targets, problem, bad_target);
  const KernelHandle* beta_kernel = beta_kernels.get(Variant::dense, at::kFloat, at::kFloat);
  KernelFunction beta(beta_kernel);
  beta.bind_operands(log_beta, probs, table, problem.lengths, nll).bind(p);
  dispatch_groups(beta, beta_kernel, p.batch, p.states, ctc_recursion_threads, ctc_backward_op);
  const KernelHandle* rows_kernel = gradient_kernels.get(Variant::dense, at::kFloat, at::kFloat);
  KernelFunction rows(rows_kernel);
  rows.bind_operands(gradient, grad.contiguous(), probs, table, problem.lengths, nll, alpha, log_beta).bind(p);
  dispatch_groups(rows, rows_kernel, p.time * p.batch, p.classes, ctc_row_threads, ctc_backward_op);
  check_targets_in_range(ctc_backward_op, std::move(bad_target), p.classes);
  return gradient;
}

at::Tensor _ctc_loss_backward_Tensor(const at::Tensor& grad, const at::Tensor& log_probs, const at::Tensor& targets,
                                     const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                                     const at::Tensor& neg_log_likelihood, const at::Tensor& log_alpha, int64_t blank,
                                     bool zero_infinity) {
  const std::vector<int64_t> inputs = lengths_on_host(input_lengths, "input_lengths");
  const std::vector<int64_t> target_sizes = lengths_on_host(target_lengths, "target_lengths");
  return mps_ops::_ctc_loss_backward(grad, log_probs, targets, inputs, target_sizes, neg_log_likelihood, log_alpha, blank,
                            zero_infinity);
}

}  // namespace mps_ops
