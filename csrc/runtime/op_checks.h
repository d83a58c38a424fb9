// Argument checks and output preparation shared by host stubs. Every error
// names the op, the dtype or device at fault, and raises the exception type
// the CPU reference raises for the same mistake.
#pragma once

#include <ATen/core/Tensor.h>

#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

namespace mps_ops {

// Tensors must live where the backend's kernels run; 0-dim CPU tensors are
// fine anywhere (they are bound as values).
void check_device(const char* op, const at::Tensor& tensor);

// float64 (Metal has no double) raises TypeError; complex raises
// NotImplementedError, as the CPU kernels' dtype dispatch does. A 0-dim CPU
// input may be float64: it is bound as a value, converted on the host.
void check_dtype(const char* op, const at::Tensor& tensor);

// Ops whose CPU kernels are LAPACK's (float32, float64, complex): Metal has
// float32 alone. check_dtype, then NotImplementedError for any other dtype.
void check_float32_only(const char* op, const at::Tensor& tensor);

// torch's squareCheckInputs for linear-algebra ops: batches of square
// matrices, in the CPU's words, `name` leading them ("linalg.eig").
void check_square_matrices(const at::Tensor& a, const char* name);

// torch's checkFloatingOrComplex, in its words; without low precision, half
// and bfloat16 raise as the CPU's RuntimeError (linalg.matrix_sqrth).
void check_floating_or_complex(const at::Tensor& a, const char* name, bool allow_low_precision = true);

// check_device for each tensor given; nullptr and undefined ones (absent
// optional arguments, see optional_pointer) are skipped.
void check_devices(const char* op, std::initializer_list<const at::Tensor*> tensors);

// An optional tensor argument as a pointer: nullptr where absent or undefined.
const at::Tensor* optional_pointer(const std::optional<at::Tensor>& t);

// TensorIterator's rule where it does not promote: every operand of
// `expected`, the first's dtype ("Found dtype Half but expected Float").
void check_same_dtype(c10::ScalarType expected, std::initializer_list<const at::Tensor*> operands);

// The dtype an op would compute in must exist in Metal (TypeError otherwise).
void check_result_dtype(const char* op, c10::ScalarType dtype, const at::Tensor& device_like);

// uint16, uint32 and uint64, which most CPU kernels' dtype dispatch lacks.
bool is_wide_unsigned(c10::ScalarType dtype);

// Integer and bool inputs compute in the default float dtype, as
// TensorIterator's promote_integer_inputs_to_float does.
c10::ScalarType float_result_type(c10::ScalarType dtype);

// How the dtype of a tensor an op writes may differ from its result's.
enum class OutputDtype {
  exact,     // the CPU's structured and legacy kernels: RuntimeError otherwise
  castable,  // TensorIterator ops: any dtype the result can be cast to
};

enum class OutputDtype;

// Where the CPU checks an out='s dtype before its dtype dispatch (structured
// kernels, TensorIterator), an input of a dtype the op lacks (complex, or
// half for a float-only kernel) with an out of another dtype (exact), or one
// the result cannot be cast to (castable), gets the CPU's RuntimeError
// rather than check_dtype's NotImplementedError: call this before the dtype
// checks. (check_output checks the same again, in its own order.)
void check_out_dtype_first(c10::ScalarType input, const at::Tensor& out, OutputDtype rule = OutputDtype::exact);

// Every tensor an op writes into (out=, grad_input=, indices=) goes through
// here, in the CPU's order: device, dtype (by `rule`), resize to `shape`
// (resize_output, with the CPU's warning for a non-empty out of another
// shape), then no element written twice and no memory shared with any of
// `inputs` (a GPU writes in no serial order, so an aliased output would give
// order-dependent results where the CPU's serial loop gives its own).
// Returns whether out can take the kernel's result directly (same dtype).
bool check_output(const char* op, at::Tensor& out, c10::ScalarType dtype, at::IntArrayRef shape,
                  std::initializer_list<const at::Tensor*> inputs = {},
                  OutputDtype rule = OutputDtype::exact);

// The strides the CPU's TensorIterator gives an output computed from these
// inputs, in the op's order (where their stride orders disagree, the first
// input not broadcast along the dims decides): a channels-last input beside
// a broadcast weight gives a channels-last output. Worked out on meta
// tensors: nothing is allocated.
std::vector<int64_t> iterator_output_strides(at::ArrayRef<const at::Tensor*> inputs);

// The result of an op whose CPU kernel allocates it in its first operand's
// shape (contiguous) and lets its TensorIterator resize it where the
// operands broadcast to `shape` (binomial, the Gamma gradients): contiguous
// where the first operand has that shape, else in the layout the iterator
// gives; the first operand's dtype, on the operands' device (a 0-dim CPU
// operand's is not it).
at::Tensor first_operand_output(at::ArrayRef<const at::Tensor*> operands, at::IntArrayRef shape);

// check_output for an element-wise op's out=: an out it resizes takes the
// layout iterator_output_strides gives for `inputs` (in the CPU's iterator's
// order, outputs it does not resize first), as the CPU's resize of an
// iterator's output does (an out of the right size keeps its own); an out
// that is also one of `inputs` cannot be resized (the CPU's RuntimeError).
// `unaliased`: check_output's `inputs` (where no TensorIterator checks overlap).
bool check_elementwise_output(const char* op, at::Tensor& out, c10::ScalarType dtype, at::IntArrayRef shape,
                              at::ArrayRef<const at::Tensor*> inputs, OutputDtype rule,
                              std::initializer_list<const at::Tensor*> unaliased = {});

// check_output for a structured op's out= (a pool's grad_input=,
// lanczos's out=): an out it resizes takes `like`'s suggested memory format
// (channels-last in, channels-last out), as the CPU's set_output_raw_strided
// restrides it; an out of the right size keeps its own strides. (The same
// elements, so check_output's aliasing check still holds.)
bool check_structured_output(const char* op, at::Tensor& out, c10::ScalarType dtype, at::IntArrayRef shape,
                             std::initializer_list<const at::Tensor*> inputs, const at::Tensor& like);

// No element of `written` written twice, no memory shared with any of
// `inputs` (nullptr and undefined ones skipped): check_output's last step,
// for an output restrided after it.
void check_no_aliasing(const at::Tensor& written, std::initializer_list<const at::Tensor*> inputs);

// An input the op writes in place (an in-place self, noise, running
// statistics): device, a Metal dtype, no element written twice, no memory
// shared with any of `inputs`.
void check_inplace(const char* op, const at::Tensor& self, std::initializer_list<const at::Tensor*> inputs = {});

// Ops whose CPU kernel writes through a raw pointer refuse a non-contiguous
// output ("grad_input must be contiguous"); so do we, with its words.
void check_contiguous_output(const at::Tensor& out, const char* name);

// The smallest and largest value of a non-empty integer tensor: one aminmax
// read back, so host checks of index ranges wait for the GPU on a Mac, and
// the kernels after them never index out of bounds.
std::pair<int64_t, int64_t> value_range(const at::Tensor& values);

// Several 0-dim values (reductions still on the device), or one tensor's
// elements (the CTC loss's lengths), as int64 in one copy to the host:
// each read waits for the GPU, so a stub with several checks reads their
// values together.
std::vector<int64_t> read_back(c10::ArrayRef<at::Tensor> values);

// A fresh output for `like`'s shape and layout (dense permutations kept, so a
// transposed input still runs the dense kernel).
at::Tensor empty_output_like(const at::Tensor& like, c10::ScalarType dtype);

}  // namespace mps_ops
