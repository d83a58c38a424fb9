// A flag a kernel raises on bad input that only the kernel reads anyway (a
// class index out of range): checking it there costs one read of one int
// after the dispatches, where a check before them costs a pass over the
// input and a round trip that leaves the GPU idle before the kernel starts.
// Kernels take it as `device int*` and store 1 (every raising thread stores
// the same value, so no atomics); they must then skip the bad element's
// reads and writes.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/zeros.h>

namespace mps_ops {

class KernelFlag {
 public:
  explicit KernelFlag(const at::Tensor& like) : tensor(at::zeros({1}, like.options().dtype(at::kInt))) {}

  // Whether a kernel raised it: waits for the GPU.
  bool raised() const { return tensor.item<int>() != 0; }

  at::Tensor tensor;  // what the kernel binds
};

}  // namespace mps_ops
