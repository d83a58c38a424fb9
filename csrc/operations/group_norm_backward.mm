// Host stub of native_group_norm_backward: a `fill` op (torch 2.9 to 2.12
// have no MPS kernel for it, so GroupNorm's backward raised on a Mac). Kernels
// in csrc/kernels/group_norm_backward.metal, beside batch_norm.metal's sums
// and element pass. Checks and results are the CPU's (group_norm.cpp and its
// kernel): the input gradient in the input's suggested memory format, the
// parameters' in the weight's dtype (the input's without one).
#include "../runtime/channel_pass.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include "../kernels/batch_norm_params.h"
#include "../kernels/group_norm_backward_params.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <array>
#include <tuple>
#include <vector>

namespace mps_ops {

namespace {

constexpr const char* group_norm_op = "native_group_norm_backward";

// The CPU's dtype rules, in its order: dY of X's dtype; a half or bfloat16
// X whose mean is float takes float statistics and weight (its mixed path),
// any other X its own dtype for each; its floating dtype dispatch; then the
// weight's. Returns the weight's dtype.
c10::ScalarType check_dtypes(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean,
                             const at::Tensor& rstd, const at::Tensor* weight) {
  const c10::ScalarType dtype = x.scalar_type();
  TORCH_CHECK(dy.scalar_type() == dtype, group_norm_op, ": grad_out is ", dy.scalar_type(), ", the input ", dtype,
              " (on ", x.device(), "); they must be the same");
  const bool reduced = dtype == at::kHalf || dtype == at::kBFloat16;
  const bool mixed = reduced && mean.scalar_type() == at::kFloat;
  const c10::ScalarType param = mixed ? at::kFloat : dtype;
  for (const at::Tensor* t : {&mean, &rstd}) {
    TORCH_CHECK(t->scalar_type() == param, group_norm_op, ": the input is ", dtype, " (on ", x.device(),
                "), so mean and rstd must be ", param, ", not ", t->scalar_type());
  }
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(dtype), group_norm_op, " not implemented for '",
                              c10::toString(dtype), "' on ", x.device());
  check_dtype(group_norm_op, x);
  // (The CPU reads the weight's dtype inside its dispatch.)
  TORCH_CHECK(weight == nullptr || weight->scalar_type() == param, group_norm_op, ": the input is ", dtype, " (on ",
              x.device(), "), so the weight must be ", param, ", not ", weight->scalar_type());
  return param;
}

// The CPU's size checks (its kernel's), which come before its answer for
// an empty input.
void check_sizes(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                 const at::Tensor* weight, int64_t n, int64_t c, int64_t hxw, int64_t groups) {
  TORCH_CHECK(n >= 0 && c >= 0 && hxw >= 0, group_norm_op, ": N, C and HxW must not be negative, got ", n, ", ",
              c, " and ", hxw);
  for (const at::Tensor* t : {&dy, &x}) {
    TORCH_CHECK(t->numel() == n * c * hxw, group_norm_op, ": grad_out and input need N * C * HxW = ", n * c * hxw,
                " elements, got ", t->numel(), " (", x.scalar_type(), " on ", x.device(), ")");
  }
  TORCH_CHECK(mean.numel() == n * groups && rstd.numel() == n * groups, group_norm_op,
              ": mean and rstd need N * group = ", n * groups, " elements, got ", mean.numel(), " and ",
              rstd.numel());
  TORCH_CHECK(weight == nullptr || weight->numel() == c, group_norm_op, ": the weight needs C = ", c,
              " elements, got ", weight->numel());
}

// Per (n, c): sum(dy) and sum(dy (x - mean of its group)), over the spatial
// elements (x3 and dy3: (N, C, HxW) views in the input's memory format).
std::pair<at::Tensor, at::Tensor> channel_sums(const at::Tensor& dy3, const at::Tensor& x3, const at::Tensor& mean,
                                               int64_t groups) {
  static KernelCache sums_kernels("batch_norm_backward_sums");
  const int64_t n = x3.size(0), c = x3.size(1);
  const auto float_options = x3.options().dtype(at::kFloat);
  const at::Tensor grad_sum = at::empty({n * c}, float_options), dot = at::empty({n * c}, float_options);
  // Each (n, c)'s mean: its group's.
  const at::Tensor channel_mean = mean.view({n, groups, 1}).expand({n, groups, c / groups}).contiguous().view({n * c});
  const ReductionPlan plan = plan_reduction(x3, {2});
  TORCH_INTERNAL_ASSERT(!plan.input.defined(), group_norm_op, ": a 3-dim view needs no copy");
  const no_params nothing{};
  dispatch_reduction(reducer_kernels(sums_kernels, at::kFloat, x3.scalar_type()), {&grad_sum, &dot},
                     {&dy3, &x3, &channel_mean}, plan, nothing);
  return {grad_sum, dot};
}

// The element pass, in pieces whose (n, c) pairs are channels of
// batch_norm_backward_apply: contiguous inputs as (1, samples * C, HxW)
// views of up to 2**32 - 1 elements, channels-last ones one sample at a
// time (their channel index runs fastest, the sample's slowest).
void input_gradient(const at::Tensor& dx, const at::Tensor& dy, const at::Tensor& x, const at::Tensor& coefficients,
                    int64_t n, int64_t c, int64_t hxw, at::MemoryFormat format) {
  static KernelCache apply_kernels("batch_norm_backward_apply");
  const bool contiguous = format == at::MemoryFormat::Contiguous;
  const int64_t per_sample = c * hxw;
  const int64_t samples_per_piece = contiguous ? std::max<int64_t>(1, UINT32_MAX / std::max<int64_t>(1, per_sample)) : 1;
  for (int64_t start = 0; start < n; start += samples_per_piece) {
    const int64_t length = std::min(samples_per_piece, n - start);
    auto piece = [&](const at::Tensor& t) {
      return contiguous ? t.view({n, c, hxw}).narrow(0, start, length).view({1, length * c, hxw})
                        : t.narrow(0, start, length);
    };
    const at::Tensor dx_piece = piece(dx), dy_piece = piece(dy), x_piece = piece(x);
    run_channel_pass(apply_kernels, dx_piece, {dy_piece, x_piece}, coefficients.narrow(0, start * c, length * c),
                     channel_layout(x_piece), grouped_formula);
  }
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_group_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean, const at::Tensor& rstd,
    const std::optional<at::Tensor>& weight_opt, c10::SymInt n_sym, c10::SymInt c_sym, c10::SymInt hxw_sym,
    int64_t groups, std::array<bool, 3> mask) {
  const at::Tensor* weight = optional_pointer(weight_opt);
  check_devices(group_norm_op, {&grad_out, &input, &mean, &rstd, weight});
  const int64_t n = n_sym.expect_int(), c = c_sym.expect_int(), hxw = hxw_sym.expect_int();
  const c10::ScalarType param = check_dtypes(grad_out, input, mean, rstd, weight);
  // The CPU's: grad_input in the input's suggested memory format, the
  // parameters' gradients in the weight's dtype (the input's without one;
  // the CPU raises there, asked for them: autograd never asks).
  check_sizes(grad_out, input, mean, rstd, weight, n, c, hxw, groups);
  const at::MemoryFormat format = input.suggest_memory_format();
  const c10::ScalarType grad_param_dtype = weight != nullptr ? weight->scalar_type() : input.scalar_type();
  const auto param_options = input.options().dtype(grad_param_dtype);
  // The parameters' gradients take the weight's shape (C elements in any dims).
  const std::vector<int64_t> param_shape = weight != nullptr ? weight->sizes().vec() : std::vector<int64_t>{c};
  if (input.numel() == 0) {
    return {mask[0] ? at::zeros_like(input, {}, format) : at::Tensor(),
            mask[1] ? at::zeros(param_shape, param_options) : at::Tensor(),
            mask[2] ? at::zeros(param_shape, param_options) : at::Tensor()};
  }
  // Where the CPU divides by zero or reads past the statistics.
  TORCH_CHECK(groups > 0 && c % groups == 0, group_norm_op, ": ", c, " channels in ", groups,
              " groups: the groups must divide the channels");
  const bool channels_last = format != at::MemoryFormat::Contiguous;
  // A channels-last input's dims are (N, C, spatial...) for the (N, C, HxW) view.
  TORCH_CHECK(!channels_last || (input.size(0) == n && input.size(1) == c), group_norm_op, ": a channels-last ",
              "input of size ", input.sizes(), " for N = ", n, " and C = ", c);
  TORCH_CHECK(n * c <= UINT32_MAX && n * groups <= UINT32_MAX, "mps_ops: ", group_norm_op, " over ", n,
              " samples of ", c, " channels");
  const at::Tensor x = input.contiguous(format), dy = grad_out.contiguous(format);
  const at::Tensor x3 = x.view({n, c, hxw}), dy3 = dy.view({n, c, hxw});
  const at::Tensor mean_values = mean.to(at::kFloat).contiguous(), rstd_values = rstd.to(at::kFloat).contiguous();
  const auto [grad_sum, dot] = channel_sums(dy3, x3, mean_values, groups);

  group_norm_backward_params p{};
  p.samples = static_cast<unsigned>(n);
  p.channels = static_cast<unsigned>(c);
  p.groups = static_cast<unsigned>(groups);
  p.inv_count = static_cast<float>(1.0 / static_cast<double>(c / groups * hxw));
  p.weighted = weight != nullptr ? 1 : 0;
  p.want_weight = mask[1] ? 1 : 0;
  p.want_bias = mask[2] ? 1 : 0;
  // Without a weight the kernels read none: mean_values fills its slot.
  const at::Tensor w = weight != nullptr ? weight->contiguous() : mean_values;
  at::Tensor grad_input, grad_weight, grad_bias;
  if (mask[0]) {
    static KernelCache group_kernels("group_norm_backward_groups");
    const at::Tensor coefficients = at::empty({n * c, batch_norm_coefficients}, x.options().dtype(at::kFloat));
    KernelFunction per_group(group_kernels.get(Variant::dense, param, param));
    per_group.bind_operands(coefficients, grad_sum, dot, mean_values, rstd_values, w).bind(p);
    per_group.dispatch(Dim3{static_cast<uint32_t>(n * groups), 1, 1});
    grad_input = at::empty(input.sizes(), input.options().memory_format(format));
    input_gradient(grad_input, dy, x, coefficients, n, c, hxw, format);
  }
  if (mask[1] || mask[2]) {
    static KernelCache param_kernels("group_norm_backward_params");
    grad_weight = mask[1] ? at::empty(param_shape, param_options) : at::Tensor();
    grad_bias = mask[2] ? at::empty(param_shape, param_options) : at::Tensor();
    // Gradients not asked for: their slots hold a tensor the kernel never writes.
    const at::Tensor& unused = mask[1] ? grad_weight : grad_bias;
    KernelFunction per_channel(param_kernels.get(Variant::dense, grad_param_dtype, grad_param_dtype));
    per_channel.bind_operands(mask[1] ? grad_weight : unused, mask[2] ? grad_bias : unused, grad_sum, dot, rstd_values)
        .bind(p);
    per_channel.dispatch(Dim3{static_cast<uint32_t>(c), 1, 1});
  }
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace mps_ops
