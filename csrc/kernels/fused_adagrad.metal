// _fused_adagrad_ (torch.optim.Adagrad(fused=True)), one parameter tensor per
// dispatch, in float for half and bfloat:
//   g = (maximize ? -grad : grad) / grad_scale     (unscaled grad written back)
//   g += weight_decay * param
//   state_sum += g * g
//   param -= lr / (1 + (step - 1) * lr_decay) * g / (sqrt(state_sum) + eps)
// and nothing at all when found_inf is 1 (the CPU's test). step, lr, grad_scale and
// found_inf are read from their (device) tensors, so the host never waits.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/per_element.h>
#include "fused_adagrad_params.h"
using namespace metal;

// Up to K elements per thread (adagrad_elements_per_thread, per_element.h's
// tiles: 8 halves of three operands took 64 registers). The step's scalars and
// every element's operands are loaded before any store: a store to param,
// grad or state_sum could alias them for all the compiler knows, so a load
// after a store waits for it (a round trip per element); the step size is
// then computed once per thread, not once per element.
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
    uint thread_index [[thread_position_in_grid]]) {
  constexpr uint K = mps_ops::adagrad_elements_per_thread;
  const mps_ops::adagrad_params p = params;  // read once: the stores below could alias it
  if (p.has_found_inf && found_inf[0] == 1.0f) {
    return;
  }
  const float lr = p.lr_from_tensor ? lr_tensor[0] : p.lr;
  const float clr = lr / (1.0f + (step[0] - 1.0f) * p.lr_decay);
  const float scale = p.has_grad_scale ? grad_scale[0] : 1.0f;
  const uint first = mps_ops::per_element_first<K>(thread_index), tile = mps_ops::elementwise_tile;
  float g[K], value[K], sum[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * tile;
    if (i < p.count) {
      g[k] = float(grad[i]);
      value[k] = float(param[i]);
      sum[k] = float(state_sum[i]);
    }
  }
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * tile;
    if (i < p.count) {
      float gk = g[k];
      if (p.has_grad_scale) {
        gk /= scale;
        grad[i] = static_cast<T>(gk);
      }
      if (p.maximize) {
        gk = -gk;
      }
      if (p.weight_decay != 0.0f) {
        gk += p.weight_decay * value[k];
      }
      const float s = sum[k] + gk * gk;
      state_sum[i] = static_cast<T>(s);
      param[i] = static_cast<T>(value[k] - clr * gk / (sqrt(s) + p.eps));
    }
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, fused_adagrad, dense)
