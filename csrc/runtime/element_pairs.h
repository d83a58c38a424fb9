// Host half of mps_ops/element_pairs.h: whether a kernel may read and write
// the given tensors' elements two per 32-bit word.
#pragma once

#include "reduction.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

namespace mps_ops {

// Contiguous rows of `row_length` elements in every tensor: 2-byte elements
// (half, bfloat16), an even row length (so no word straddles two rows) and
// every tensor's data 4-byte aligned (so every row starts on a word). Never
// an empty tensor: its data pointer may be null (aligned) beside odd strides
// or an odd storage offset, which no view as words takes.
inline bool in_element_pairs(int64_t row_length, std::initializer_list<const at::Tensor*> tensors) {
  if (row_length % 2 != 0) {
    return false;
  }
  for (const at::Tensor* t : tensors) {
    if (t->numel() == 0 || t->element_size() != 2 || reinterpret_cast<uintptr_t>(t->const_data_ptr()) % 4 != 0) {
      return false;
    }
  }
  return true;
}

// Element-wise operands (glu_jvp's) as 32-bit words of two elements, where
// every one is contiguous along its last dim and in_element_pairs there (its
// other strides then even too, so every row starts on a word): views of
// dtype int32, each dim's size and stride counted in words along the last
// dim. Empty where some operand does not allow it.
inline std::vector<at::Tensor> operands_in_words(const std::vector<at::Tensor>& operands) {
  for (const at::Tensor& t : operands) {
    if (t.dim() == 0 || t.stride(-1) != 1 || !in_element_pairs(t.size(-1), {&t})) {
      return {};
    }
    for (int64_t d = 0; d + 1 < t.dim(); ++d) {
      if (t.stride(d) % 2 != 0) {
        return {};
      }
    }
  }
  std::vector<at::Tensor> words;
  for (const at::Tensor& t : operands) {
    words.push_back(t.view(at::kInt));
  }
  return words;
}

// The same for a row-wise kernel's plan: its rows contiguous in every tensor.
inline bool rows_in_pairs(const ReductionPlan& plan, std::initializer_list<const at::Tensor*> tensors) {
  const reduction_layout& layout = plan.layout;
  return !plan.input.defined() && layout.inner_ndim == 1 && layout.inner_strides[0] == 1 &&
         in_element_pairs(layout.inner_numel, tensors);
}

// Contiguous half and bfloat16 slices of an even length, read two elements
// per load by a reducer that takes a slice's elements in any order
// (hash_tensor's xor, max, min): the plan's layout counted in 32-bit words
// of two elements, and the input viewed as such words. Half the loads for
// the same bytes: the H200's profile of the one-element kernels showed
// 2-byte loads, one per element, as their cost (hash_tensor half 0.42x ->
// 0.51x torch's kernel), and an Apple GPU's loads likewise cost per
// instruction. Undefined where the slices do not allow it (strided, odd
// lengths, a start off a word, or a copy by the plan).
struct WordPlan {
  ReductionPlan plan;
  at::Tensor words;
};
inline std::optional<WordPlan> slices_in_words(const char* op, const at::Tensor& self, const ReductionPlan& plan) {
  // (Contiguous, so every element lies in one slice: an even numel, and
  // outer strides that are multiples of the even slice length.)
  if (!rows_in_pairs(plan, {&self}) || !self.is_contiguous()) {
    return std::nullopt;
  }
  WordPlan words{plan, self.reshape(-1).view(at::kInt)};
  reduction_layout& w = words.plan.layout;
  for (int d = 0; d < w.outer_ndim; ++d) {
    TORCH_INTERNAL_ASSERT(w.outer_strides[d] % 2 == 0, op, ": a contiguous slice start off a word");
    w.outer_strides[d] /= 2;
  }
  w.inner_sizes[0] /= 2;
  w.inner_numel /= 2;
  return words;
}

}  // namespace mps_ops
