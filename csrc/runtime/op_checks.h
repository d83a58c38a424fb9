// Argument checks and output preparation shared by host stubs. Every error
// names the op, the dtype or device at fault, and raises the exception type
// the CPU reference raises for the same mistake.
#pragma once

#include <ATen/core/Tensor.h>

#include <utility>

namespace mps_ops {

// Tensors must live where the backend's kernels run; 0-dim CPU tensors are
// fine anywhere (they are bound as values).
void check_device(const char* op, const at::Tensor& tensor);

// float64 (Metal has no double) raises TypeError; complex raises
// NotImplementedError, as the CPU kernels' dtype dispatch does. A 0-dim CPU
// input may be float64: it is bound as a value, converted on the host.
void check_dtype(const char* op, const at::Tensor& tensor);

// The dtype an op would compute in must exist in Metal (TypeError otherwise).
void check_result_dtype(const char* op, c10::ScalarType dtype, const at::Tensor& device_like);

// Integer and bool inputs compute in the default float dtype, as
// TensorIterator's promote_integer_inputs_to_float does.
c10::ScalarType float_result_type(c10::ScalarType dtype);

// out= checks: the result dtype must be castable to out's dtype (the CPU's
// RuntimeError otherwise), then out is resized to `shape`. Returns whether
// out can take the kernel's result directly (same dtype).
bool prepare_output(const char* op, at::Tensor& out, c10::ScalarType result_dtype,
                    at::IntArrayRef shape);

// The smallest and largest value of a non-empty integer tensor: one aminmax
// read back, so host checks of index ranges wait for the GPU on a Mac, and
// the kernels after them never index out of bounds.
std::pair<int64_t, int64_t> value_range(const at::Tensor& values);

// A fresh output for `like`'s shape and layout (dense permutations kept, so a
// transposed input still runs the dense kernel).
at::Tensor empty_output_like(const at::Tensor& like, c10::ScalarType dtype);

}  // namespace mps_ops
