// _fused_adagrad_ (torch.optim.Adagrad(fused=True)), one parameter tensor per
// dispatch, one element per thread (memory order, as the CPU steps it), in
// float for half and bfloat:
//   g = (maximize ? -grad : grad) / grad_scale     (unscaled grad written back)
//   g += weight_decay * param
//   state_sum += g * g
//   param -= lr / (1 + (step - 1) * lr_decay) * g / (sqrt(state_sum) + eps)
// and nothing at all when found_inf is 1 (the CPU's test). step, lr, grad_scale and
// found_inf are read from their (device) tensors, so the host never waits.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include "fused_adagrad_params.h"
using namespace metal;

template <typename T>
kernel void fused_adagrad(
    device T* param [[buffer(0)]],
    device T* grad [[buffer(1)]],
    device T* state_sum [[buffer(2)]],
    constant float* step [[buffer(3)]],
    constant float* lr_tensor [[buffer(4)]],
    constant float* grad_scale [[buffer(5)]],
    constant float* found_inf [[buffer(6)]],
    constant mps_ops::adagrad_params& params [[buffer(7)]],
    uint index [[thread_position_in_grid]]) {
  if (params.has_found_inf && found_inf[0] == 1.0f) {
    return;
  }
  float g = float(grad[index]);
  if (params.has_grad_scale) {
    g /= grad_scale[0];
    grad[index] = static_cast<T>(g);
  }
  if (params.maximize) {
    g = -g;
  }
  const float p = float(param[index]);
  if (params.weight_decay != 0.0f) {
    g += params.weight_decay * p;
  }
  const float sum = float(state_sum[index]) + g * g;
  state_sum[index] = static_cast<T>(sum);
  const float lr = params.lr_from_tensor ? lr_tensor[0] : params.lr;
  const float clr = lr / (1.0f + (step[0] - 1.0f) * params.lr_decay);
  param[index] = static_cast<T>(p - clr * g / (sqrt(sum) + params.eps));
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, fused_adagrad, dense)
