#include "op_checks.h"

#include "backend.h"

#include <ATen/ops/aminmax.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/stack.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/Resize.h>
#include <c10/core/ScalarType.h>

namespace mps_ops {

namespace {

// `tensor` on the backend's device (or, where allowed, a 0-dim CPU value).
void check_on_backend(const char* op, const at::Tensor& tensor, const char* which, bool cpu_value_allowed) {
  const auto device_type = backend().device_type();
  TORCH_CHECK(tensor.device().type() == device_type || (cpu_value_allowed && tensor.dim() == 0 && tensor.is_cpu()),
              "mps_ops: ", op, " expected ", which, " on ", c10::DeviceTypeName(device_type, /*lower_case=*/true),
              " (", backend().name(), " backend), but got one on ", tensor.device());
}

}  // namespace

void check_device(const char* op, const at::Tensor& tensor) {
  check_on_backend(op, tensor, "all tensors", /*cpu_value_allowed=*/true);
}

void check_devices(const char* op, std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* t : tensors) {
    if (t != nullptr && t->defined()) {
      check_device(op, *t);
    }
  }
}

const at::Tensor* optional_pointer(const std::optional<at::Tensor>& t) {
  return t && t->defined() ? &*t : nullptr;
}

void check_same_dtype(c10::ScalarType expected, std::initializer_list<const at::Tensor*> operands) {
  for (const at::Tensor* t : operands) {
    TORCH_CHECK(t->scalar_type() == expected, "Found dtype ", t->scalar_type(), " but expected ", expected);
  }
}

void check_result_dtype(const char* op, c10::ScalarType dtype, const at::Tensor& device_like) {
  TORCH_CHECK_TYPE(dtype != c10::ScalarType::Double, "mps_ops: ", op,
                   " does not support float64 on ", device_like.device(), " (", backend().name(),
                   " backend): Metal has no double; use float32");
}

void check_dtype(const char* op, const at::Tensor& tensor) {
  const auto dtype = tensor.scalar_type();
  if (!(tensor.dim() == 0 && tensor.is_cpu())) {
    check_result_dtype(op, dtype, tensor);
  }
  TORCH_CHECK_NOT_IMPLEMENTED(!c10::isComplexType(dtype), "mps_ops: ", op, " not implemented for '",
                              dtype, "' on ", tensor.device());
}

bool is_wide_unsigned(c10::ScalarType dtype) {
  return dtype == at::kUInt16 || dtype == at::kUInt32 || dtype == at::kUInt64;
}

c10::ScalarType float_result_type(c10::ScalarType dtype) {
  return c10::isIntegralType(dtype, /*includeBool=*/true) ? c10::typeMetaToScalarType(c10::get_default_dtype())
                                                          : dtype;
}

void check_no_aliasing(const at::Tensor& written, std::initializer_list<const at::Tensor*> inputs) {
  at::assert_no_internal_overlap(written);
  for (const at::Tensor* input : inputs) {
    if (input != nullptr && input->defined()) {
      at::assert_no_overlap(written, *input);
    }
  }
}

void check_square_matrices(const at::Tensor& a, const char* name) {
  TORCH_CHECK(a.dim() >= 2, name, ": The input tensor A must have at least 2 dimensions.");
  TORCH_CHECK(a.size(-1) == a.size(-2), name, ": A must be batches of square matrices, but they are ", a.size(-2),
              " by ", a.size(-1), " matrices");
}

void check_floating_or_complex(const at::Tensor& a, const char* name, bool allow_low_precision) {
  const auto dtype = a.scalar_type();
  TORCH_CHECK(at::isFloatingType(dtype) || at::isComplexType(dtype), name,
              ": Expected a floating point or complex tensor as input. Got ", dtype);
  TORCH_CHECK(allow_low_precision || (dtype != at::kHalf && dtype != at::kBFloat16), name,
              ": Low precision dtypes not supported. Got ", dtype);
}

void check_float32_only(const char* op, const at::Tensor& tensor) {
  check_dtype(op, tensor);
  TORCH_CHECK_NOT_IMPLEMENTED(tensor.scalar_type() == at::kFloat, "mps_ops: ", op, " not implemented for '",
                              tensor.scalar_type(), "' on ", tensor.device());
}

namespace {

// TensorIterator's rule for out=, in the CPU's words.
void check_castable(c10::ScalarType result, const at::Tensor& out) {
  TORCH_CHECK(c10::canCast(result, out.scalar_type()), "result type ", result,
              " can't be cast to the desired output type ", out.scalar_type());
}

}  // namespace

void check_out_dtype_first(c10::ScalarType input, const at::Tensor& out, OutputDtype rule) {
  if (!out.defined()) return;
  if (rule == OutputDtype::castable) {
    check_castable(input, out);
  } else {
    TORCH_CHECK(out.scalar_type() == input, "Expected out tensor to have dtype ", input, ", but got ",
                out.scalar_type(), " instead");
  }
}

bool check_output(const char* op, at::Tensor& out, c10::ScalarType dtype, at::IntArrayRef shape,
                  std::initializer_list<const at::Tensor*> inputs, OutputDtype rule) {
  check_on_backend(op, out, "its output", /*cpu_value_allowed=*/false);
  if (rule == OutputDtype::exact) {
    TORCH_CHECK(out.scalar_type() == dtype, "mps_ops: ", op, ": expected out tensor to have dtype ", dtype,
                ", but got ", out.scalar_type(), " instead (", out.device(), ")");
  } else {
    check_castable(dtype, out);
  }
  check_result_dtype(op, out.scalar_type(), out);
  at::native::resize_output(out, shape);
  check_no_aliasing(out, inputs);
  return out.scalar_type() == dtype;
}

std::vector<int64_t> iterator_output_strides(at::ArrayRef<const at::Tensor*> inputs) {
  std::vector<at::Tensor> metas;
  metas.reserve(inputs.size());
  for (const at::Tensor* input : inputs) {
    // One dtype for all: strides count elements, and the iterator then
    // needs no rule for the output's dtype.
    metas.push_back(at::empty_strided(input->sizes(), input->strides(),
                                      input->options().device(at::kMeta).dtype(at::kFloat)));
  }
  at::TensorIteratorConfig config;
  config.add_owned_output(at::Tensor());
  for (const at::Tensor& meta : metas) {
    config.add_const_input(meta);
  }
  return config.build().output().strides().vec();
}

at::Tensor first_operand_output(at::ArrayRef<const at::Tensor*> operands, at::IntArrayRef shape) {
  const at::Tensor& first = *operands.front();
  c10::Device device = first.device();
  for (const at::Tensor* t : operands) {
    if (!t->is_cpu()) {
      device = t->device();
      break;
    }
  }
  const at::TensorOptions options = first.options().device(device);
  return first.sizes() == shape ? at::empty(shape, options)
                                : at::empty_strided(shape, iterator_output_strides(operands), options);
}

bool check_elementwise_output(const char* op, at::Tensor& out, c10::ScalarType dtype, at::IntArrayRef shape,
                              at::ArrayRef<const at::Tensor*> inputs, OutputDtype rule,
                              std::initializer_list<const at::Tensor*> unaliased) {
  const bool resizes = out.sizes() != shape;
  for (const at::Tensor* input : inputs) {
    TORCH_CHECK(!resizes || !out.is_same(*input), "output with shape ", out.sizes(),
                " doesn't match the broadcast shape ", shape);
  }
  const bool same_dtype = check_output(op, out, dtype, shape, unaliased, rule);
  if (resizes) {
    // resize_output left it contiguous: a dense permutation of the same shape
    // fits the same storage.
    out.as_strided_(shape, iterator_output_strides(inputs));
  }
  return same_dtype;
}

bool check_structured_output(const char* op, at::Tensor& out, c10::ScalarType dtype, at::IntArrayRef shape,
                             std::initializer_list<const at::Tensor*> inputs, const at::Tensor& like) {
  const bool resized = out.sizes() != shape;
  const bool direct = check_output(op, out, dtype, shape, inputs);
  if (resized) {
    out.unsafeGetTensorImpl()->empty_tensor_restride(like.suggest_memory_format());
  }
  return direct;
}

void check_inplace(const char* op, const at::Tensor& self, std::initializer_list<const at::Tensor*> inputs) {
  check_on_backend(op, self, "the tensor it writes", /*cpu_value_allowed=*/false);
  check_dtype(op, self);
  check_no_aliasing(self, inputs);
}

void check_contiguous_output(const at::Tensor& out, const char* name) {
  TORCH_CHECK(out.is_contiguous(), name, " must be contiguous");
}

at::Tensor empty_output_like(const at::Tensor& like, c10::ScalarType dtype) {
  // The common case, a dense input, takes its strides directly: cheaper than
  // empty_like's memory-format logic (measured by benchmarks/bench_host.py).
  if (like.is_non_overlapping_and_dense()) {
    return at::empty_strided(like.sizes(), like.strides(), like.options().dtype(dtype));
  }
  return at::empty_like(like, like.options().dtype(dtype), at::MemoryFormat::Preserve);
}

std::pair<int64_t, int64_t> value_range(const at::Tensor& values) {
  const auto [lowest, highest] = at::aminmax(values);
  const std::vector<int64_t> bounds = read_back({lowest, highest});
  return {bounds[0], bounds[1]};
}

std::vector<int64_t> read_back(c10::ArrayRef<at::Tensor> values) {
  // (stack promotes mixed dtypes; the copy converts to int64 as before.)
  const at::Tensor on_host = at::stack(values).to(at::kCPU, at::kLong);
  const int64_t* data = on_host.const_data_ptr<int64_t>();
  return std::vector<int64_t>(data, data + on_host.numel());
}

}  // namespace mps_ops
