// Host half of mps_ops/element_pairs.h: whether a kernel may read and write
// the given tensors' elements two per 32-bit word.
#pragma once

#include "reduction.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <initializer_list>

namespace mps_ops {

// Contiguous rows of `row_length` elements in every tensor: 2-byte elements
// (half, bfloat16), an even row length (so no word straddles two rows) and
// every tensor's data 4-byte aligned (so every row starts on a word).
inline bool in_element_pairs(int64_t row_length, std::initializer_list<const at::Tensor*> tensors) {
  if (row_length % 2 != 0) {
    return false;
  }
  for (const at::Tensor* t : tensors) {
    if (t->element_size() != 2 || reinterpret_cast<uintptr_t>(t->const_data_ptr()) % 4 != 0) {
      return false;
    }
  }
  return true;
}

// The same for a row-wise kernel's plan: its rows contiguous in every tensor.
inline bool rows_in_pairs(const ReductionPlan& plan, std::initializer_list<const at::Tensor*> tensors) {
  const reduction_layout& layout = plan.layout;
  return !plan.input.defined() && layout.inner_ndim == 1 && layout.inner_strides[0] == 1 &&
         in_element_pairs(layout.inner_numel, tensors);
}

}  // namespace mps_ops
