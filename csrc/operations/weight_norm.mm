// Host stubs of _weight_norm_interface and its backward: `override` ops,
// whose stock MPS kernels run MPSGraph (torch 2.9 to 2.15). Kernels in
// csrc/kernels/weight_norm.metal, the element passes batch_norm.metal's
// (csrc/runtime/channel_pass.h). Checks and messages are the CPU's
// (weight_norm_cpu, weight_norm_backward_cpu), plus one it lacks: g and the
// norms must hold one value per index of `dim` (the CPU reads past them).
#include "../runtime/channel_pass.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include "../kernels/batch_norm_params.h"

#include <ATen/ops/empty.h>

#include <tuple>

namespace mps_ops {

namespace {

// The CPU's checks, in its order: v's size along dim, its dim assertion,
// its dtype dispatch (`kernel` names the CPU's), then the other tensors'
// dtypes (norms float, the others v's).
void check_weight_norm(const char* op, const char* kernel, const at::Tensor& v, const at::Tensor& g, int64_t dim,
                       const at::Tensor* grad_w, const at::Tensor* norms) {
  TORCH_CHECK_INDEX(v.dim() > 0, "Dimension specified as ", dim, " but tensor has no dimensions");
  TORCH_CHECK(dim == 0 || dim == v.dim() - 1, op, ": fused kernels can only be applied for first or last dim (dim ",
              dim, " of a ", v.dim(), "-dim v)");
  const c10::ScalarType dtype = v.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(dtype), "\"", kernel, "\" not implemented for '",
                              c10::toString(dtype), "' on ", v.device(), " (", op, ")");
  check_dtype(op, v);
  if (norms != nullptr) {
    TORCH_CHECK(norms->scalar_type() == at::kFloat, "expected scalar type Float but found ", norms->scalar_type());
  }
  for (const at::Tensor* t : {grad_w, &g}) {
    TORCH_CHECK(t == nullptr || t->scalar_type() == dtype, "expected scalar type ", dtype, " but found ",
                t->scalar_type());
  }
  // (The CPU writes or reads past a g shorter than v along dim.)
  TORCH_CHECK(g.numel() == v.size(dim), op, ": g has ", g.numel(), " elements, v ", v.size(dim), " along dim ",
              dim);
}

// v (contiguous) as (N, C, inner), C its size along dim: (1, C, rest) for
// dim 0, (rest, C, 1) for the last dim.
at::Tensor channel_view(const at::Tensor& v, int64_t dim) {
  const int64_t channels = v.size(dim);
  const int64_t rest = channels == 0 ? 0 : v.numel() / channels;
  return dim == 0 ? v.view({1, channels, rest}) : v.view({rest, channels, 1});
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> _weight_norm_interface(const at::Tensor& v, const at::Tensor& g, int64_t dim) {
  static KernelCache norm_kernels("weight_norm_norms"), channel_kernels("weight_norm_channels"),
      apply_kernels("batch_norm_apply");
  const char* op = "_weight_norm_interface";
  check_devices(op, {&v, &g});
  check_weight_norm(op, "weight_norm_kernel", v, g, dim, nullptr, nullptr);
  const at::Tensor view = channel_view(v.contiguous(), dim);
  at::Tensor w = at::empty(v.sizes(), v.options().memory_format(at::MemoryFormat::Contiguous));
  // Norms in float whatever v's dtype, shaped like g (the CPU's).
  at::Tensor norms = at::empty(g.sizes(), g.options().dtype(at::kFloat).memory_format(at::MemoryFormat::Contiguous));
  const ChannelLayout layout = channel_layout(view);
  if (layout.channels == 0) {
    return {w, norms};
  }
  if (view.size(2) == 0) {  // channels of no elements: norms of 0 (the CPU's)
    return {w, norms.zero_()};
  }
  if (dim == 0) {
    // One kernel: each channel is a row of v (weight_norm.metal's weight_norm_rows).
    static KernelCache row_kernels("weight_norm_rows");
    const at::Tensor rows = view.view({layout.channels, view.size(2)});
    const ReductionPlan plan = plan_reduction(rows, {1});
    check_row_length(op, plan);
    const at::Tensor g_values = g.contiguous();
    const at::Tensor w_rows = w.view(rows.sizes());
    dispatch_reduction(row_kernels.get(Variant::reduce, v.scalar_type(), v.scalar_type()), {&w_rows, &norms},
                       {&rows, &g_values}, plan, {}, SliceMapping::register_rows);
    return {w, norms};
  }
  const at::Tensor norm_values = norms.view({layout.channels});
  const no_params nothing{};
  dispatch_reduction(reducer_kernels(norm_kernels, at::kFloat, v.scalar_type()), {&norm_values}, view,
                     channel_plan(view), nothing);
  const at::Tensor coefficients = at::empty({layout.channels, batch_norm_coefficients}, norms.options());
  const uint32_t channels = static_cast<uint32_t>(layout.channels);
  const at::Tensor g_values = g.contiguous();
  KernelFunction scale(channel_kernels.get(Variant::dense, v.scalar_type(), v.scalar_type()));
  scale.bind_operands(coefficients, g_values, norm_values).bind(channels);
  scale.dispatch(Dim3{channels, 1, 1});
  run_channel_pass(apply_kernels, w.view(view.sizes()), {view}, coefficients, layout, scaled_formula);
  return {w, norms};
}

std::tuple<at::Tensor, at::Tensor> _weight_norm_interface_backward(const at::Tensor& grad_w,
                                                                   const at::Tensor& saved_v,
                                                                   const at::Tensor& saved_g,
                                                                   const at::Tensor& saved_norms, int64_t dim) {
  static KernelCache sums_kernels("weight_norm_backward_sums"), channel_kernels("weight_norm_backward_channels"),
      apply_kernels("batch_norm_backward_apply");
  const char* op = "_weight_norm_interface_backward";
  check_devices(op, {&grad_w, &saved_v, &saved_g, &saved_norms});
  // The CPU's first checks.
  TORCH_CHECK(saved_v.is_contiguous(), "saved_v must be contiguous");
  TORCH_CHECK(saved_g.is_contiguous(), "saved_g must be contiguous");
  TORCH_CHECK(saved_norms.is_contiguous(), "saved_norm must be contiguous");
  check_weight_norm(op, "weight_norm_backward_kernel", saved_v, saved_g, dim, &grad_w, &saved_norms);
  TORCH_CHECK(grad_w.sizes().equals(saved_v.sizes()), op, ": grad_w of size ", grad_w.sizes(), " for a v of size ",
              saved_v.sizes());
  TORCH_CHECK(saved_norms.numel() == saved_g.numel(), op, ": saved_norms has ", saved_norms.numel(),
              " elements, g ", saved_g.numel());
  const at::Tensor view = channel_view(saved_v.contiguous(), dim);
  const at::Tensor grad_view = grad_w.contiguous().view(view.sizes());
  at::Tensor grad_v = at::empty(saved_v.sizes(), saved_v.options().memory_format(at::MemoryFormat::Contiguous));
  at::Tensor grad_g = at::empty(saved_g.sizes(), saved_g.options().memory_format(at::MemoryFormat::Contiguous));
  const ChannelLayout layout = channel_layout(view);
  if (layout.channels == 0) {
    return {grad_v, grad_g};
  }
  // Over dim 0, float rows in one kernel: each channel is a row of v and
  // grad_w (weight_norm_backward_rows). Not 2-byte ones: their rows are not
  // held in registers (shape_limits.h), and reading both tensors twice there
  // cost more than the three passes (H100: half 0.95x -> 0.67x torch).
  if (dim == 0 && view.size(2) > 0 && saved_v.element_size() >= 4) {
    static KernelCache row_kernels("weight_norm_backward_rows");
    const int64_t rest = view.size(2);
    const at::Tensor v_rows = view.view({layout.channels, rest}), grad_rows = grad_view.view({layout.channels, rest});
    const ReductionPlan plan = plan_reduction(v_rows, {1});
    check_row_length(op, plan);
    const at::Tensor grad_v_rows = grad_v.view(v_rows.sizes()), grad_g_values = grad_g.view({layout.channels});
    const at::Tensor g_values = saved_g.contiguous(), norm_values = saved_norms.contiguous();
    dispatch_reduction(row_kernels.get(Variant::reduce, saved_v.scalar_type(), saved_v.scalar_type()),
                       {&grad_v_rows, &grad_g_values}, {&grad_rows, &v_rows, &g_values, &norm_values}, plan, {},
                       SliceMapping::register_rows);
    return {grad_v, grad_g};
  }
  const auto float_options = saved_v.options().dtype(at::kFloat);
  const at::Tensor sums = at::empty({layout.channels}, float_options);
  const no_params nothing{};
  dispatch_reduction(reducer_kernels(sums_kernels, at::kFloat, saved_v.scalar_type()), {&sums}, {&grad_view, &view},
                     channel_plan(view), nothing);
  const at::Tensor coefficients = at::empty({layout.channels, batch_norm_coefficients}, float_options);
  const uint32_t channels = static_cast<uint32_t>(layout.channels);
  const at::Tensor grad_g_values = grad_g.view({layout.channels});
  const at::Tensor g_values = saved_g.contiguous(), norm_values = saved_norms.contiguous();
  KernelFunction per_channel(channel_kernels.get(Variant::dense, saved_v.scalar_type(), saved_v.scalar_type()));
  per_channel.bind_operands(grad_g_values, coefficients, sums, g_values, norm_values).bind(channels);
  per_channel.dispatch(Dim3{channels, 1, 1});
  run_channel_pass(apply_kernels, grad_v.view(view.sizes()), {grad_view, view}, coefficients, layout,
                   products_formula);
  return {grad_v, grad_g};
}

}  // namespace mps_ops
