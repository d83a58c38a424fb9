// Dispatch shapes shared by host stubs whose kernels take one thread per
// element of one tensor (pools, segment reductions) and whose outputs may be
// written through a contiguous stand-in.
#pragma once

#include "host_name.h"

#include <ATen/core/Tensor.h>

namespace mps_ops {

// One thread per element of `grid_like` (dense variant, its dtype): the
// operands (outputs first) in slots 0.., then `params` (size bytes).
void dispatch_per_element(KernelCache& kernels, const at::Tensor& grid_like,
                          std::initializer_list<const at::Tensor*> operands, const void* params,
                          size_t size);

// out itself when contiguous, else a contiguous tensor of its shape that
// copy_back() then copies into out.
at::Tensor contiguous_target(const at::Tensor& out);
void copy_back(at::Tensor& out, const at::Tensor& target);

}  // namespace mps_ops
