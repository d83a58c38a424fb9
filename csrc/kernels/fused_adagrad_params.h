// Parameters shared by fused_adagrad.metal and its host stub
// (csrc/operations/fused_adagrad.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

namespace mps_ops {

// Elements per thread, whatever the dtype.
enum { adagrad_elements_per_thread = 4 };

// _fused_adagrad_: the hyperparameters; lr comes from a tensor when
// lr_from_tensor (the tensor_lr overload), grad_scale and found_inf only when
// their flags say they were given.
struct adagrad_params {
  float lr;
  float lr_decay;
  float weight_decay;
  float eps;
  int maximize;
  int lr_from_tensor;
  int has_grad_scale;
  int has_found_inf;
  unsigned count;  // the parameter's elements
};

}  // namespace mps_ops
