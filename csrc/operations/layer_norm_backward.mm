// Host stub of native_layer_norm_backward: an `override` op, whose stock MPS
// kernel runs MPSGraph (torch 2.9 to 2.15). Kernels in
// csrc/kernels/layer_norm_backward.metal. Checks and messages are the CPU's
// (its _check_layer_norm_inputs), in its order.
#include "../runtime/element_pairs.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include "../kernels/layer_norm_backward_params.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/core/SymIntArrayRef.h>

#include <algorithm>
#include <array>
#include <tuple>

namespace mps_ops {

namespace {

// The weight and bias gradients' first pass: threads (columns x chunks of
// rows) enough to keep a GPU's memory system busy (tens of thousands are
// resident on current GPUs, Apple's and NVIDIA's), no more, so that the
// second pass reads few chunks per column (2**18 threads: 64 rows per chunk
// left 1024 chunks to merge per column over 64 K rows, and one thread per
// column merging them took 0.13-0.25 ms on an H100); and at least this many
// rows per chunk.
constexpr int64_t norm_partial_threads = int64_t{1} << 18;
constexpr int64_t norm_rows_per_chunk = 64;

constexpr const char* norm_op = "native_layer_norm_backward";

// The CPU's _check_layer_norm_inputs: returns the rows (M) and the
// normalized numel (N).
std::pair<int64_t, int64_t> layer_norm_rows(const at::Tensor& input, at::IntArrayRef normalized_shape,
                                            const at::Tensor* weight, const at::Tensor* bias) {
  const int64_t normalized_ndim = static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(normalized_ndim >= 1, "Expected normalized_shape to be at least 1-dimensional, i.e., ",
              "containing at least one element, but got normalized_shape = ", normalized_shape);
  TORCH_CHECK(weight == nullptr || weight->sizes().equals(normalized_shape),
              "Expected weight to be of same shape as normalized_shape, but got ", "weight of shape ",
              weight->sizes(), " and normalized_shape = ", normalized_shape);
  TORCH_CHECK(bias == nullptr || bias->sizes().equals(normalized_shape),
              "Expected bias to be of same shape as normalized_shape, but got ", "bias of shape ", bias->sizes(),
              " and normalized_shape = ", normalized_shape);
  const int64_t input_ndim = input.dim();
  const at::IntArrayRef input_shape = input.sizes();
  TORCH_CHECK(input_ndim >= normalized_ndim &&
                  input_shape.slice(input_ndim - normalized_ndim).equals(normalized_shape),
              "Given normalized_shape=", normalized_shape, ", expected input with shape [*",
              normalized_shape.size() > 0 ? ", " : "", normalized_shape, "], but got input of size", input_shape);
  const int64_t axis = input_ndim - normalized_ndim;
  const int64_t rows = c10::multiply_integers(input_shape.begin(), input_shape.begin() + axis);
  const int64_t columns = c10::multiply_integers(input_shape.begin() + axis, input_shape.end());
  return {rows, columns};
}

// dx: the rows mapping over (rows, columns).
void input_gradient(const at::Tensor& dx, const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean,
                    const at::Tensor& rstd, const at::Tensor& gamma, const layer_norm_backward_params& p) {
  static KernelCache kernels("layer_norm_backward");
  static KernelCache pair_kernels("layer_norm_backward_pairs");
  const ReductionPlan plan = plan_reduction(dy, {1});
  check_row_length(norm_op, plan);
  // Half and bfloat rows two elements per word where they allow it.
  KernelCache& cache = in_element_pairs(p.columns, {&dx, &dy, &x}) ? pair_kernels : kernels;
  dispatch_reduction(cache.get(Variant::reduce, x.scalar_type(), x.scalar_type()), {&dx},
                     {&dy, &x, &mean, &rstd, &gamma}, plan, p, SliceMapping::rows);
}

// dgamma and dbeta (both, of `dtype`, one value per column): chunks of rows,
// then the chunks in order.
std::pair<at::Tensor, at::Tensor> parameter_gradients(const at::Tensor& dy, const at::Tensor& x,
                                                      const at::Tensor& mean, const at::Tensor& rstd,
                                                      layer_norm_backward_params p, c10::ScalarType dtype) {
  static KernelCache partial_kernels("layer_norm_backward_params_partials");
  static KernelCache pair_partial_kernels("layer_norm_backward_param_pairs_partials");
  static KernelCache merge_kernels("layer_norm_backward_params_merge");
  at::Tensor dgamma = at::empty({p.columns}, x.options().dtype(dtype));
  at::Tensor dbeta = at::empty({p.columns}, x.options().dtype(dtype));
  if (p.rows == 0 || p.columns == 0) {
    return {dgamma.zero_(), dbeta.zero_()};
  }
  const int64_t wanted_chunks = std::max<int64_t>(1, norm_partial_threads / p.columns);
  p.rows_per_chunk = std::max(norm_rows_per_chunk, (p.rows + wanted_chunks - 1) / wanted_chunks);
  p.chunks = (p.rows + p.rows_per_chunk - 1) / p.rows_per_chunk;
  // The merge pass's threads round columns up to whole groups of layer_norm_merge_columns.
  TORCH_CHECK(p.chunks <= UINT32_MAX && p.columns <= UINT32_MAX - layer_norm_merge_columns, "mps_ops: ", norm_op,
              " over ", p.rows, " rows of ", p.columns);
  const at::Tensor partials = at::empty({p.chunks, p.columns, 2}, x.options().dtype(at::kFloat));
  // Half and bfloat columns in pairs where the rows allow it.
  const bool pairs = in_element_pairs(p.columns, {&dy, &x});
  KernelFunction first((pairs ? pair_partial_kernels : partial_kernels)
                           .get(Variant::reduce, x.scalar_type(), x.scalar_type()));
  first.bind_operands(partials, dy, x, mean, rstd).bind(p);
  first.dispatch(Dim3{static_cast<uint32_t>(pairs ? p.columns / 2 : p.columns), static_cast<uint32_t>(p.chunks), 1});
  KernelFunction second(merge_kernels.get(Variant::reduce, dtype, dtype));
  second.bind_operands(dgamma, dbeta, partials).bind(p);
  const uint32_t merge_groups =
      static_cast<uint32_t>((p.columns + layer_norm_merge_columns - 1) / layer_norm_merge_columns);
  second.dispatch(Dim3{merge_groups * layer_norm_merge_columns, layer_norm_merge_slices, 1},
                  Dim3{layer_norm_merge_columns, layer_norm_merge_slices, 1});
  return {dgamma, dbeta};
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, c10::SymIntArrayRef normalized_shape_sym,
    const at::Tensor& mean, const at::Tensor& rstd, const std::optional<at::Tensor>& weight_opt,
    const std::optional<at::Tensor>& bias_opt, std::array<bool, 3> output_mask) {
  const at::Tensor* weight = optional_pointer(weight_opt);
  const at::Tensor* bias = optional_pointer(bias_opt);
  check_devices(norm_op, {&grad_out, &input, &mean, &rstd, weight, bias});
  const at::IntArrayRef normalized_shape = C10_AS_INTARRAYREF_SLOW(normalized_shape_sym);
  const auto [rows, columns] = layer_norm_rows(input, normalized_shape, weight, bias);
  const c10::ScalarType dtype = input.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(dtype), "\"LayerNormBackwardKernelImpl\" not implemented for '",
                              c10::toString(dtype), "' on ", input.device());
  check_dtype(norm_op, input);
  // The CPU's kernel reads grad_out as the input's type, and mean, rstd,
  // weight and bias as the parameters' type: float where a half or bfloat16
  // input has a float weight or bias (its mixed-type path), else the
  // input's.
  const bool mixed = (dtype == at::kHalf || dtype == at::kBFloat16) &&
                     ((weight != nullptr && weight->scalar_type() == at::kFloat) ||
                      (bias != nullptr && bias->scalar_type() == at::kFloat));
  const c10::ScalarType param_type = mixed ? at::kFloat : dtype;
  auto expect = [](const at::Tensor& t, c10::ScalarType type) {
    TORCH_CHECK(t.scalar_type() == type, "expected scalar type ", type, " but found ", t.scalar_type());
  };
  expect(grad_out, dtype);
  // Statistics in float are taken whatever the input's dtype: other
  // devices' forwards (CUDA's; the CPU's mixed-type path) keep them in float
  // for a half or bfloat16 input, where the CPU's own forward returns the
  // input's dtype and its backward refuses anything else.
  for (const at::Tensor* t : {&mean, &rstd}) {
    if (t->scalar_type() != at::kFloat) {
      expect(*t, param_type);
    }
  }
  for (const at::Tensor* t : {weight, bias}) {
    if (t != nullptr) {
      expect(*t, param_type);
    }
  }
  // The kernels read every operand as one contiguous (rows, columns) view,
  // the row statistics and the weight in float. (The CPU checks none of
  // these sizes: it reads past a short one.)
  TORCH_CHECK(mean.numel() == rows && rstd.numel() == rows, norm_op, ": mean and rstd need ", rows,
              " elements (one per row), got ", mean.numel(), " and ", rstd.numel());
  TORCH_CHECK(grad_out.numel() == input.numel(), norm_op, ": grad_out has ", grad_out.numel(),
              " elements, the input ", input.numel());
  // The CPU raises RuntimeError here (its gradient is allocated like the
  // missing parameter); autograd never asks.
  TORCH_CHECK(!output_mask[1] || weight != nullptr, norm_op, ": output_mask asks for the weight's gradient, ",
              "but there is no weight (input ", dtype, " on ", input.device(), ")");
  TORCH_CHECK(!output_mask[2] || bias != nullptr, norm_op, ": output_mask asks for the bias's gradient, ",
              "but there is no bias (input ", dtype, " on ", input.device(), ")");
  const at::Tensor x = input.contiguous().view({rows, columns});
  const at::Tensor dy = grad_out.contiguous().view({rows, columns});
  const at::Tensor mean_f = mean.to(at::kFloat).contiguous();
  const at::Tensor rstd_f = rstd.to(at::kFloat).contiguous();
  // Without a weight the kernel reads no gamma: mean_f fills the slot.
  const at::Tensor gamma = weight != nullptr ? weight->to(at::kFloat).contiguous() : mean_f;
  layer_norm_backward_params p{};
  p.rows = rows;
  p.columns = columns;
  p.weighted = weight != nullptr ? 1 : 0;

  at::Tensor dx, dgamma, dbeta;
  if (output_mask[0]) {
    dx = at::empty(input.sizes(), input.options().memory_format(at::MemoryFormat::Contiguous));
    if (dx.numel() > 0) {
      input_gradient(dx.view({rows, columns}), dy, x, mean_f, rstd_f, gamma, p);
    }
  }
  const bool want_gamma = output_mask[1], want_beta = output_mask[2];  // their parameters exist (checked above)
  if (want_gamma || want_beta) {
    // Weight and bias are both of param_type (checked above).
    auto [gamma_grad, beta_grad] = parameter_gradients(dy, x, mean_f, rstd_f, p, param_type);
    if (want_gamma) {
      dgamma = gamma_grad.view(weight->sizes());
    }
    if (want_beta) {
      dbeta = beta_grad.view(bias->sizes());
    }
  }
  return {dx, dgamma, dbeta};
}

}  // namespace mps_ops
