#include "kernel_inputs.h"

#include <ATen/ops/add.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/view_as_real.h>

namespace mps_ops {

at::Tensor philox_key(const at::TensorOptions& options, std::optional<at::Generator> generator, bool draw) {
  at::Tensor key = at::empty({4}, options.dtype(at::kInt));
  if (draw) {
    key.random_(std::move(generator));
  }
  return key;
}

at::Tensor sorted_position_keys(const at::Tensor& targets) {
  const int64_t n = targets.numel();
  return std::get<0>(at::sort(at::add(at::mul(targets, n), at::arange(n, targets.options())), /*dim=*/0));
}

at::Tensor real_parts(const at::Tensor& self) {
  if (!self.is_complex()) {
    return self;
  }
  return at::view_as_real(self.is_conj() ? self.conj() : self);
}

}  // namespace mps_ops
