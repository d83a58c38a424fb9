// Host stubs of _fused_adagrad_ and its tensor_lr overload (what
// torch.optim.Adagrad(fused=True) calls); kernel in
// csrc/kernels/fused_adagrad.metal. One dispatch per parameter tensor.
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include "../kernels/include/mps_ops/params.h"

namespace mps_ops {

namespace {

// A one-element float tensor on the device: step, lr, grad_scale, found_inf.
void check_scalar_tensor(const char* what, const at::Tensor& t) {
  check_device("_fused_adagrad_", t);
  TORCH_CHECK(t.numel() == 1 && t.scalar_type() == at::kFloat, "_fused_adagrad_: expected ", what,
              " to be a one-element float32 tensor, but got ", t.scalar_type(), " of shape ", t.sizes());
}

void fused_adagrad(at::TensorList self, at::TensorList grads, at::TensorList state_sums,
                   at::TensorList state_steps, const at::Tensor* lr_tensor, double lr, double lr_decay,
                   double weight_decay, double eps, bool maximize,
                   const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  static KernelCache kernels("fused_adagrad");
  const size_t n = self.size();
  TORCH_CHECK(grads.size() == n && state_sums.size() == n && state_steps.size() == n,
              "_fused_adagrad_: expected the same number of params, grads, state_sums and state_steps, "
              "but got ", n, ", ", grads.size(), ", ", state_sums.size(), " and ", state_steps.size());
  const bool has_scale = grad_scale && grad_scale->defined();
  const bool has_inf = found_inf && found_inf->defined();
  if (has_scale) {
    check_scalar_tensor("grad_scale", *grad_scale);
  }
  if (has_inf) {
    check_scalar_tensor("found_inf", *found_inf);
  }
  if (lr_tensor) {
    check_scalar_tensor("lr", *lr_tensor);
  }
  const adagrad_params params{static_cast<float>(lr), static_cast<float>(lr_decay),
                              static_cast<float>(weight_decay), static_cast<float>(eps), maximize,
                              lr_tensor != nullptr, has_scale, has_inf};
  for (size_t i = 0; i < n; ++i) {
    const at::Tensor &param = self[i], &grad = grads[i], &sum = state_sums[i], &step = state_steps[i];
    TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(param.scalar_type()), "\"_fused_adagrad_\" not implemented for '",
                                c10::toString(param.scalar_type()), "' on ", param.device());
    check_inplace("_fused_adagrad_", param, {&grad, &sum});
    check_inplace("_fused_adagrad_", grad, {&sum});
    check_inplace("_fused_adagrad_", sum);
    check_device("_fused_adagrad_", step);
    TORCH_CHECK(step.numel() == 1, "_fused_adagrad_: expected state_steps to hold one element, but got shape ",
                step.sizes());
    TORCH_CHECK(grad.scalar_type() == param.scalar_type() && sum.scalar_type() == param.scalar_type(),
                "_fused_adagrad_: expected param, grad and state_sum of one dtype, but got ",
                param.scalar_type(), ", ", grad.scalar_type(), " and ", sum.scalar_type());
    TORCH_CHECK(grad.sizes() == param.sizes() && sum.sizes() == param.sizes(),
                "_fused_adagrad_: expected param, grad and state_sum of one shape");
    if (param.numel() == 0) {
      continue;
    }
    TORCH_CHECK(param.numel() <= UINT32_MAX, "mps_ops: _fused_adagrad_ of a tensor over 2**32 - 1 elements");
    // One flat pass over contiguous stand-ins (optimizer state usually is
    // contiguous, so these are the tensors themselves), copied back after.
    at::Tensor flat_param = param.contiguous(), flat_grad = grad.contiguous(), flat_sum = sum.contiguous();
    // The kernel reads the step as a float, whatever dtype the caller keeps it in.
    const at::Tensor step_value = step.scalar_type() == at::kFloat ? step : step.to(at::kFloat);
    // Absent optional tensors bind the step tensor: read only when flagged.
    KernelFunction function(kernels.get(Variant::dense, param.scalar_type(), param.scalar_type()));
    function.set_value(
        function.set_operands({&flat_param, &flat_grad, &flat_sum, &step_value, lr_tensor ? &*lr_tensor : &step_value,
                               has_scale ? &*grad_scale : &step_value, has_inf ? &*found_inf : &step_value}),
        params);
    function.dispatch(Dim3{static_cast<uint32_t>(param.numel()), 1, 1});
    for (auto [written, flat] : {std::pair{&param, &flat_param}, {&grad, &flat_grad}, {&sum, &flat_sum}}) {
      if (!flat->is_same(*written)) {
        written->copy_(*flat);  // TensorList elements are const handles; copy_ writes the data
      }
    }
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
