// Host stubs of _fused_adagrad_ and its tensor_lr overload (what
// torch.optim.Adagrad(fused=True) calls); kernel in
// csrc/kernels/fused_adagrad.metal. One dispatch per parameter tensor.
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/per_element.h"

#include "../kernels/fused_adagrad_params.h"

namespace mps_ops {

namespace {

// A value the CPU reads with item(): one element of any real dtype,
// converted to float on the device (the host never waits).
at::Tensor one_value(const char* what, const at::Tensor& t) {
  check_device("_fused_adagrad_", t);
  TORCH_CHECK(t.numel() == 1, "a Tensor with ", t.numel(), " elements cannot be converted to Scalar (",
              "_fused_adagrad_'s ", what, ")");
  TORCH_CHECK_NOT_IMPLEMENTED(!c10::isComplexType(t.scalar_type()), "mps_ops: _fused_adagrad_'s ", what,
                              " of dtype ", t.scalar_type(), " on ", t.device());
  return t.scalar_type() == at::kFloat ? t : t.to(at::kFloat);
}

// grad_scale and found_inf: float32, read at element 0 (as the CPU reads them).
void check_float_flag(const char* what, const at::Tensor& t) {
  check_device("_fused_adagrad_", t);
  TORCH_CHECK(t.scalar_type() == at::kFloat, "expected scalar type Float but found ", t.scalar_type(),
              " (_fused_adagrad_'s ", what, ")");
  TORCH_CHECK(t.numel() > 0, "_fused_adagrad_: ", what, " is empty");
}

// The CPU steps each tensor's memory as a flat array of param.numel()
// elements, whatever the shapes and strides: the same here, so a tensor
// must cover exactly its elements (non-overlapping and dense, any order of
// strides) and hold at least as many as param; the CPU reads past a shorter
// one and reads or writes between the elements of a strided one.
void check_flat_operand(const char* what, const at::Tensor& t, const at::Tensor& param) {
  check_device("_fused_adagrad_", t);
  TORCH_CHECK(t.scalar_type() == param.scalar_type(), "expected scalar type ", param.scalar_type(),
              " but found ", t.scalar_type(), " (_fused_adagrad_'s ", what, ")");
  TORCH_CHECK(t.numel() >= param.numel(), "_fused_adagrad_: expected ", what, " of at least ", param.numel(),
              " elements (param's), but got ", t.numel());
  TORCH_CHECK(t.is_non_overlapping_and_dense(), "_fused_adagrad_: expected ", what,
              " to be non-overlapping and dense (its memory is stepped as a flat array), but got sizes ",
              t.sizes(), " and strides ", t.strides());
}

void fused_adagrad(at::TensorList self, at::TensorList grads, at::TensorList state_sums,
                   at::TensorList state_steps, const at::Tensor* lr_tensor, double lr, double lr_decay,
                   double weight_decay, double eps, bool maximize,
                   const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  static KernelCache kernels("fused_adagrad");
  const size_t n = self.size();
  const bool has_scale = grad_scale && grad_scale->defined();
  const bool has_inf = found_inf && found_inf->defined();
  if (has_scale) {
    check_float_flag("grad_scale", *grad_scale);
  }
  if (has_inf) {
    check_float_flag("found_inf", *found_inf);
  }
  TORCH_CHECK(grads.size() == n && state_sums.size() == n && state_steps.size() == n,
              "_fused_adagrad_: expected the same number of params, grads, state_sums and state_steps, "
              "but got ", n, ", ", grads.size(), ", ", state_sums.size(), " and ", state_steps.size());
  const at::Tensor lr_value = lr_tensor ? one_value("lr", *lr_tensor) : at::Tensor();
  adagrad_params params{static_cast<float>(lr), static_cast<float>(lr_decay),
                              static_cast<float>(weight_decay), static_cast<float>(eps), maximize,
                              lr_tensor != nullptr, has_scale, has_inf};
  for (size_t i = 0; i < n; ++i) {
    const at::Tensor &param = self[i], &grad = grads[i], &sum = state_sums[i];
    check_device("_fused_adagrad_", param);
    check_dtype("_fused_adagrad_", param);
    TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(param.scalar_type()), "\"fused_adagrad_kernel\" not implemented for '",
                                c10::toString(param.scalar_type()), "' on ", param.device());
    check_flat_operand("param", param, param);
    check_flat_operand("grad", grad, param);
    check_flat_operand("state_sum", sum, param);
    const at::Tensor step = one_value("state_steps", state_steps[i]);
    if (param.numel() == 0) {
      continue;
    }
    TORCH_CHECK(param.numel() <= UINT32_MAX, "mps_ops: _fused_adagrad_ of a tensor over 2**32 - 1 elements");
    // Absent optional tensors bind the step tensor: read only when flagged.
    params.count = static_cast<uint32_t>(param.numel());
    KernelFunction function(kernels.get(Variant::dense, param.scalar_type(), param.scalar_type()));
    function
        .bind_operands(param, grad, sum, step, lr_tensor ? lr_value : step, has_scale ? *grad_scale : step,
                       has_inf ? *found_inf : step)
        .bind(params);
    function.dispatch(Dim3{tiled_threads(param.numel(), adagrad_elements_per_thread), 1, 1});
  }
}

}  // namespace

void _fused_adagrad_(at::TensorList self, at::TensorList grads, at::TensorList state_sums,
                     at::TensorList state_steps, double lr, double lr_decay, double weight_decay,
                     double eps, bool maximize, const std::optional<at::Tensor>& grad_scale,
                     const std::optional<at::Tensor>& found_inf) {
  fused_adagrad(self, grads, state_sums, state_steps, nullptr, lr, lr_decay, weight_decay, eps, maximize,
                grad_scale, found_inf);
}

void _fused_adagrad__tensor_lr(at::TensorList self, at::TensorList grads, at::TensorList state_sums,
                               at::TensorList state_steps, const at::Tensor& lr, double lr_decay,
                               double weight_decay, double eps, bool maximize,
                               const std::optional<at::Tensor>& grad_scale,
                               const std::optional<at::Tensor>& found_inf) {
  fused_adagrad(self, grads, state_sums, state_steps, &lr, 0.0, lr_decay, weight_decay, eps, maximize,
                grad_scale, found_inf);
}

}  // namespace mps_ops
