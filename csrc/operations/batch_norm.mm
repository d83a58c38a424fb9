// Host stubs of batch_norm's forward and backward overloads: `override` ops,
// whose stock MPS kernels run MPSGraph (torch 2.9 to 2.15). Kernels in
// csrc/kernels/batch_norm.metal, the training statistics by
// batch_norm_stats.metal's reduction. Checks and messages are the CPU's
// (batch_norm_cpu and batch_norm_backward_cpu), plus two the CPU lacks where
// it reads out of bounds: parameters of the wrong length, and evaluation
// without running statistics.
#include "../runtime/channel_pass.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/per_element.h"
#include "../runtime/reduction.h"

#include "../kernels/batch_norm_params.h"
#include "../kernels/include/mps_ops/shape_limits.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <tuple>
#include <vector>

namespace mps_ops {

namespace {

// The parameters' dtype, checked as the CPU checks it: a half or bfloat16
// input whose first parameter given is float takes float parameters (the
// CPU's mixed rule), any other input its own dtype; a float input refuses
// other parameters with the mixed rule's words.
c10::ScalarType param_dtype(const at::Tensor& input, std::initializer_list<const at::Tensor*> params) {
  const c10::ScalarType dtype = input.scalar_type();
  const at::Tensor* first = nullptr;
  for (const at::Tensor* p : params) {
    if (p != nullptr && first == nullptr) {
      first = p;
    }
  }
  const bool reduced = dtype == at::kHalf || dtype == at::kBFloat16;
  const bool mixed = reduced && first != nullptr && first->scalar_type() == at::kFloat;
  const c10::ScalarType wanted = mixed ? at::kFloat : dtype;
  for (const at::Tensor* p : params) {
    if (p == nullptr) {
      continue;
    }
    TORCH_CHECK(!(mixed || dtype == at::kFloat) || p->scalar_type() == at::kFloat,
                "mixed dtype (CPU): expect parameter to have scalar type of Float");
    TORCH_CHECK(p->scalar_type() == wanted, "expected scalar type ", wanted, " but found ", p->scalar_type());
  }
  return wanted;
}

// Every parameter one value per channel (the CPU reads past a shorter one).
void check_lengths(const char* op, int64_t channels,
                   std::initializer_list<std::pair<const char*, const at::Tensor*>> params) {
  for (const auto& [name, p] : params) {
    TORCH_CHECK(p == nullptr || p->numel() == channels, op, ": ", name, " should contain ", channels,
                " elements not ", p->numel());
  }
}

// The first check of the CPU's out= overloads and backward: a 0-dim input
// has no dim 1.
void check_has_channels(const at::Tensor& input) {
  TORCH_CHECK_INDEX(input.dim() > 0, "Dimension specified as 1 but tensor has no dimensions");
}

// The input's checks, in the CPU's order: its dtype dispatch, then dim 1.
void check_input(const char* op, const at::Tensor& input) {
  const c10::ScalarType dtype = input.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(dtype), "\"batch_norm\" not implemented for '",
                              c10::toString(dtype), "' on ", input.device(), " (", op, ")");
  check_dtype(op, input);
  // (The CPU's reduction over every dim but 1 sizes a list of dim - 1.)
  TORCH_CHECK_VALUE(input.dim() > 0, op, ": a 0-dim input has no channel dim");
  TORCH_CHECK_INDEX(input.dim() >= 2, "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}

struct ForwardResult {
  at::Tensor out;
  at::Tensor save_mean;
  at::Tensor save_invstd;
};

ForwardResult batch_norm_forward(const char* op, const at::Tensor& input, const at::Tensor* weight,
                                 const at::Tensor* bias, const at::Tensor* running_mean,
                                 const at::Tensor* running_var, bool training, double momentum, double eps) {
  static KernelCache stats_kernels("batch_norm_stats"), channel_kernels("batch_norm_channels"),
      apply_kernels("batch_norm_apply");
  check_devices(op, {&input, weight, bias, running_mean, running_var});
  check_input(op, input);
  TORCH_CHECK_VALUE((running_mean == nullptr) == (running_var == nullptr),
                    "running_mean and running_var must either both be None or neither be None");
  const c10::ScalarType params = param_dtype(input, {weight, bias, running_mean, running_var});
  const ChannelLayout layout = channel_layout(input);
  for (const at::Tensor* running : {running_mean, running_var}) {
    // The CPU reads them through 1-dim accessors.
    TORCH_CHECK(running == nullptr || running->dim() == 1, "TensorAccessor expected 1 dims but tensor has ",
                running->dim(), " (", op, ")");
  }
  check_lengths(op, layout.channels,
                {{"weight", weight}, {"bias", bias}, {"running_mean", running_mean}, {"running_var", running_var}});
  TORCH_CHECK(!training || input.numel() > 0, "input tensor must have at least one element, but got input_sizes = ",
              input.sizes());
  TORCH_CHECK(training || running_mean != nullptr, op, ": running_mean must be defined in evaluation mode");
  for (const at::Tensor* running : {running_mean, running_var}) {
    if (training && running != nullptr) {
      check_inplace(op, *running, {&input});
    }
  }
  const at::Tensor x = input.contiguous(layout.format);
  const auto param_options = input.options().dtype(params);
  ForwardResult result{at::empty(input.sizes(), input.options().memory_format(layout.format)),
                       at::empty({training ? layout.channels : 0}, param_options),
                       at::empty({training ? layout.channels : 0}, param_options)};
  if (layout.channels == 0) {
    return result;
  }
  // Statistics in float (one rounding, into save_mean and save_invstd).
  const auto float_options = input.options().dtype(at::kFloat);
  at::Tensor batch_mean = at::empty({training ? layout.channels : 0}, float_options);
  at::Tensor batch_var = at::empty({training ? layout.channels : 0}, float_options);
  if (training) {
    const no_params nothing{};
    dispatch_reduction(reducer_kernels(stats_kernels, at::kFloat, input.scalar_type()), {&batch_mean, &batch_var},
                       x, channel_plan(x), nothing);
  }
  // The running statistics are updated in place where contiguous, else
  // through a copy.
  const bool has_running = running_mean != nullptr;
  const at::Tensor rm = has_running ? running_mean->contiguous() : result.save_mean;
  const at::Tensor rv = has_running ? running_var->contiguous() : result.save_invstd;
  const at::Tensor w = weight != nullptr ? weight->contiguous() : rm;
  const at::Tensor b = bias != nullptr ? bias->contiguous() : rm;
  const at::Tensor coefficients = at::empty({layout.channels, batch_norm_coefficients}, float_options);
  batch_norm_channel_params p{};
  p.channels = static_cast<unsigned>(layout.channels);
  p.eps = static_cast<float>(eps);
  p.momentum = static_cast<float>(momentum);
  const double count = static_cast<double>(input.numel() / layout.channels);
  p.unbias = static_cast<float>(count / (count - 1));
  p.training = training ? 1 : 0;
  p.has_weight = weight != nullptr ? 1 : 0;
  p.has_bias = bias != nullptr ? 1 : 0;
  p.has_running = has_running ? 1 : 0;
  // Absent operands' slots hold a tensor the kernel never reads.
  KernelFunction channels(channel_kernels.get(Variant::dense, params, params));
  channels.bind_operands(result.save_mean, result.save_invstd, rm, rv, coefficients, training ? batch_mean : coefficients,
                         training ? batch_var : coefficients, w, b)
      .bind(p);
  channels.dispatch(Dim3{p.channels, 1, 1});
  if (has_running && training) {
    if (!running_mean->is_same(rm)) {
      running_mean->copy_(rm);
    }
    if (!running_var->is_same(rv)) {
      running_var->copy_(rv);
    }
  }
  run_channel_pass(apply_kernels, result.out, {x}, coefficients, layout, scaled_formula);
  return result;
}

struct BackwardArgs {
  const at::Tensor* weight;
  const at::Tensor* running_mean;
  const at::Tensor* running_var;
  const at::Tensor* save_mean;
  const at::Tensor* save_invstd;
};

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward_impl(
    const char* op, const at::Tensor& grad_out, const at::Tensor& input, const BackwardArgs& a, bool train,
    double eps, std::array<bool, 3> mask) {
  static KernelCache sums_kernels("batch_norm_backward_sums"), channel_kernels("batch_norm_backward_channels"),
      apply_kernels("batch_norm_backward_apply");
  check_devices(op, {&grad_out, &input, a.weight, a.running_mean, a.running_var, a.save_mean, a.save_invstd});
  check_has_channels(input);
  check_input(op, input);
  TORCH_CHECK(grad_out.scalar_type() == input.scalar_type(), "expected scalar type ", input.scalar_type(),
              " but found ", grad_out.scalar_type());
  // Statistics in float are taken whatever the parameters' dtype: CUDA's
  // forward (and the CPU's mixed one) keeps a half or bfloat16 input's
  // save_mean and save_invstd in float, where the CPU's backward refuses
  // them beside half parameters.
  auto unless_float = [](const at::Tensor* t) { return t != nullptr && t->scalar_type() == at::kFloat ? nullptr : t; };
  const c10::ScalarType params = param_dtype(
      input, {a.weight, a.running_mean, a.running_var, unless_float(a.save_mean), unless_float(a.save_invstd)});
  for (const at::Tensor* t : {a.weight, a.running_mean, a.running_var, a.save_mean, a.save_invstd}) {
    // The CPU reads each through a 1-dim accessor.
    TORCH_CHECK(t == nullptr || t->dim() == 1, "TensorAccessor expected 1 dims but tensor has ", t->dim(), " (",
                op, ")");
  }
  const ChannelLayout layout = channel_layout(input);
  // The statistics the formula takes (the CPU reads null pointers
  // otherwise); the others may be empty (evaluation's save_mean).
  const at::Tensor* mean = train ? a.save_mean : a.running_mean;
  const at::Tensor* spread = train ? a.save_invstd : a.running_var;
  TORCH_CHECK(mean != nullptr && spread != nullptr, op, ": ",
              train ? "save_mean and save_invstd must be defined in training mode"
                    : "running_mean and running_var must be defined in evaluation mode");
  check_lengths(op, layout.channels,
                {{"weight", a.weight}, {train ? "save_mean" : "running_mean", mean},
                 {train ? "save_invstd" : "running_var", spread}});
  TORCH_CHECK(grad_out.sizes().equals(input.sizes()), op, ": grad_out of size ", grad_out.sizes(),
              " for an input of size ", input.sizes());
  const at::Tensor x = input.contiguous(layout.format);
  const at::Tensor g = grad_out.contiguous(layout.format);
  const auto param_options = input.options().dtype(params);
  at::Tensor grad_input, grad_weight, grad_bias;
  if (mask[0]) {
    grad_input = at::empty(input.sizes(), input.options().memory_format(layout.format));
  }
  if (mask[1]) {
    grad_weight = at::empty({layout.channels}, param_options);
  }
  if (mask[2]) {
    grad_bias = at::empty({layout.channels}, param_options);
  }
  if (layout.channels == 0) {
    return {grad_input, grad_weight, grad_bias};
  }
  const at::Tensor mean_values = mean->to(at::kFloat).contiguous(), spread_values = spread->to(at::kFloat).contiguous();
  const at::Tensor w = a.weight != nullptr ? a.weight->contiguous() : mean_values;
  // The sums, unless nothing needs them (evaluation's grad_input alone) or
  // there is nothing to sum.
  const auto float_options = input.options().dtype(at::kFloat);
  const bool sums_needed = (mask[0] && train) || mask[1] || mask[2];
  at::Tensor grad_sum, dot;
  if (sums_needed && input.numel() > 0) {
    grad_sum = at::empty({layout.channels}, float_options);
    dot = at::empty({layout.channels}, float_options);
    // Reduced dims that do not merge and pass 2**32 elements per channel
    // make the plan read a permuted copy, which stands in for one input
    // only: both are then read channels-last (the reduced dims merge).
    const ReductionPlan plan = channel_plan(x);
    const auto channels_last = [](const at::Tensor& t) { return t.movedim(1, -1).contiguous().movedim(-1, 1); };
    const at::Tensor x_read = plan.input.defined() ? channels_last(x) : x;
    const at::Tensor g_read = plan.input.defined() ? channels_last(g) : g;
    const no_params nothing{};
    dispatch_reduction(reducer_kernels(sums_kernels, params, input.scalar_type()), {&grad_sum, &dot},
                       {&g_read, &x_read, &mean_values}, plan.input.defined() ? channel_plan(x_read) : plan, nothing);
  } else {
    grad_sum = at::zeros({layout.channels}, float_options);
    dot = grad_sum;
  }
  const at::Tensor coefficients = at::empty({layout.channels, batch_norm_coefficients}, float_options);
  batch_norm_channel_params p{};
  p.channels = static_cast<unsigned>(layout.channels);
  p.eps = static_cast<float>(eps);
  p.inv_count = static_cast<float>(1.0 / static_cast<double>(input.numel() / layout.channels));
  p.training = train ? 1 : 0;
  p.has_weight = a.weight != nullptr ? 1 : 0;
  p.want_weight = mask[1] ? 1 : 0;
  p.want_bias = mask[2] ? 1 : 0;
  // Gradients not asked for: their slots hold a tensor the kernel never writes.
  KernelFunction channels(channel_kernels.get(Variant::dense, params, params));
  channels.bind_operands(mask[1] ? grad_weight : coefficients, mask[2] ? grad_bias : coefficients, coefficients,
                         grad_sum, dot, mean_values, spread_values, w)
      .bind(p);
  channels.dispatch(Dim3{p.channels, 1, 1});
  if (mask[0]) {
    run_channel_pass(apply_kernels, grad_input, {g, x}, coefficients, layout,
                     train ? centred_formula : scaled_formula);
  }
  return {grad_input, grad_weight, grad_bias};
}

// An out= overload: the functional result written into the caller's
// tensors (resized as the CPU resizes them).
void write_out(const char* op, at::Tensor& out, const at::Tensor& result, const at::Tensor& input) {
  check_output(op, out, result.scalar_type(), result.sizes(), {&input});
  out.copy_(result);
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> write_outs(const char* op, const ForwardResult& r,
                                                             const at::Tensor& input, at::Tensor& out,
                                                             at::Tensor& save_mean, at::Tensor& save_invstd) {
  write_out(op, out, r.out, input);
  if (r.save_mean.numel() > 0) {
    write_out(op, save_mean, r.save_mean, input);
    write_out(op, save_invstd, r.save_invstd, input);
    return {out, save_mean, save_invstd};
  }
  // Evaluation: the CPU checks their device and dtype and leaves them as
  // they are.
  for (const at::Tensor* saved : {&save_mean, &save_invstd}) {
    check_device(op, *saved);
    TORCH_CHECK(saved->scalar_type() == r.save_mean.scalar_type(), "expected scalar type ",
                r.save_mean.scalar_type(), " but found ", saved->scalar_type());
  }
  return {out, save_mean, save_invstd};
}

// _batch_norm_with_update's reserve: the CPU's is empty (no cuDNN workspace).
at::Tensor empty_reserve(const at::Tensor& input) { return at::empty({0}, input.options().dtype(at::kByte)); }

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var, bool training,
    double momentum, double eps) {
  ForwardResult r = batch_norm_forward("native_batch_norm", input, optional_pointer(weight), optional_pointer(bias),
                                       optional_pointer(running_mean), optional_pointer(running_var), training,
                                       momentum, eps);
  return {r.out, r.save_mean, r.save_invstd};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> native_batch_norm_out(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var, bool training,
    double momentum, double eps, at::Tensor& out, at::Tensor& save_mean, at::Tensor& save_invstd) {
  const char* op = "native_batch_norm.out";
  check_has_channels(input);
  const ForwardResult r = batch_norm_forward(op, input, optional_pointer(weight), optional_pointer(bias),
                                             optional_pointer(running_mean), optional_pointer(running_var),
                                             training, momentum, eps);
  return write_outs(op, r, input, out, save_mean, save_invstd);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> _native_batch_norm_legit(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, bool training, double momentum, double eps) {
  ForwardResult r = batch_norm_forward("_native_batch_norm_legit", input, optional_pointer(weight),
                                       optional_pointer(bias), &running_mean, &running_var, training, momentum, eps);
  return {r.out, r.save_mean, r.save_invstd};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> _native_batch_norm_legit_out(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, bool training, double momentum, double eps, at::Tensor& out,
    at::Tensor& save_mean, at::Tensor& save_invstd) {
  const char* op = "_native_batch_norm_legit.out";
  check_has_channels(input);
  const ForwardResult r = batch_norm_forward(op, input, optional_pointer(weight), optional_pointer(bias),
                                             &running_mean, &running_var, training, momentum, eps);
  return write_outs(op, r, input, out, save_mean, save_invstd);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> _native_batch_norm_legit_no_stats(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    bool training, double momentum, double eps) {
  ForwardResult r = batch_norm_forward("_native_batch_norm_legit.no_stats", input, optional_pointer(weight),
                                       optional_pointer(bias), nullptr, nullptr, training, momentum, eps);
  return {r.out, r.save_mean, r.save_invstd};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> _native_batch_norm_legit_no_stats_out(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    bool training, double momentum, double eps, at::Tensor& out, at::Tensor& save_mean, at::Tensor& save_invstd) {
  const char* op = "_native_batch_norm_legit.no_stats_out";
  check_has_channels(input);
  const ForwardResult r = batch_norm_forward(op, input, optional_pointer(weight), optional_pointer(bias), nullptr,
                                             nullptr, training, momentum, eps);
  return write_outs(op, r, input, out, save_mean, save_invstd);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> _batch_norm_with_update(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, double momentum, double eps) {
  ForwardResult r = batch_norm_forward("_batch_norm_with_update", input, optional_pointer(weight),
                                       optional_pointer(bias), &running_mean, &running_var, true, momentum, eps);
  return {r.out, r.save_mean, r.save_invstd, empty_reserve(input)};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> _batch_norm_with_update_out(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, double momentum, double eps, at::Tensor& out,
    at::Tensor& save_mean, at::Tensor& save_invstd, at::Tensor& reserve) {
  const char* op = "_batch_norm_with_update.out";
  check_has_channels(input);
  const ForwardResult r = batch_norm_forward(op, input, optional_pointer(weight), optional_pointer(bias),
                                             &running_mean, &running_var, true, momentum, eps);
  write_outs(op, r, input, out, save_mean, save_invstd);
  check_device(op, reserve);  // then left as it is, as the CPU leaves it
  return {out, save_mean, save_invstd, reserve};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_invstd, bool train, double eps,
    std::array<bool, 3> output_mask) {
  const BackwardArgs a{optional_pointer(weight), optional_pointer(running_mean), optional_pointer(running_var),
                       optional_pointer(save_mean), optional_pointer(save_invstd)};
  return batch_norm_backward_impl("native_batch_norm_backward", grad_out, input, a, train, eps, output_mask);
}

// The backward of _batch_norm_with_update (update: training) and of
// _batch_norm_no_update; save_var is the forward's save_invstd.
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_var, bool update, double eps,
    std::array<bool, 3> output_mask, const at::Tensor& reserve) {
  (void)reserve;  // empty: no workspace
  const BackwardArgs a{weight.defined() ? &weight : nullptr, optional_pointer(running_mean),
                       optional_pointer(running_var), optional_pointer(save_mean), optional_pointer(save_var)};
  return batch_norm_backward_impl("batch_norm_backward", grad_out, input, a, update, eps, output_mask);
}

}  // namespace mps_ops
