// The dispatch shape shared by host stubs whose kernels take one thread per
// element of one tensor (pools, segment reductions, logspace).
#pragma once

#include "host_name.h"
#include "kernel_params.h"

#include <ATen/core/Tensor.h>

#include <initializer_list>

namespace mps_ops {

// One thread per element of `grid_like` (dense variant, its dtype): the
// operands (outputs first) in the first slots, then `params`.
void dispatch_per_element(KernelCache& kernels, const at::Tensor& grid_like,
                          std::initializer_list<const at::Tensor*> operands, KernelParams params);

}  // namespace mps_ops
