// Kernels write their outputs as contiguous memory of one dtype. An output
// the caller passed (out=, in place, grad_input=) may be neither: the kernel
// then writes a stand-in, copied into the output afterwards. This is the one
// place that decides which.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace mps_ops {

class ContiguousOutput {
 public:
  // What the stand-in starts with: nothing (the kernel writes every element)
  // or the output's values (the kernel updates them, e.g. running statistics).
  enum class Contents { discard, keep };

  // dtype: the kernel's output dtype when it may differ from out's (a
  // castable out=); the stand-in is then of that dtype.
  explicit ContiguousOutput(const at::Tensor& out, std::optional<c10::ScalarType> dtype = std::nullopt,
                            Contents contents = Contents::discard);
  ContiguousOutput(const at::Tensor& out, Contents contents)
      : ContiguousOutput(out, std::nullopt, contents) {}

  // What the kernel writes: out itself, or the stand-in.
  at::Tensor tensor;

  // Copies the stand-in into out; nothing when the kernel wrote out itself.
  void copy_back() const;

 private:
  at::Tensor out_;
};

// A copy of t (always a copy: kernels write it in place) whose matrices are
// column-major and whose batches are contiguous: LAPACK's layout, which the
// CPU's linear-algebra results have.
at::Tensor batched_column_major_copy(const at::Tensor& t);

// An uninitialised tensor of `sizes` (at least 2 dims) in that layout, for
// a kernel to fill.
at::Tensor empty_batched_column_major(at::IntArrayRef sizes, const at::TensorOptions& options);

}  // namespace mps_ops
