#include "elementwise.h"

#include "kernel_function.h"
#include "per_element.h"

#include "../kernels/include/mps_ops/no_params.h"
#include "../kernels/include/mps_ops/shape_limits.h"

#include <c10/core/DynamicCast.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>

namespace mps_ops {

at::TensorIteratorConfig elementwise_config(bool output_from_caller) {
  at::TensorIteratorConfig config;
  // 0-dim CPU inputs (Python numbers, wrapped) ride along with MPS tensors;
  // exec_elementwise binds them as values.
  config.check_all_same_dtype(false)
      .resize_outputs(false)
      .set_check_mem_overlap(output_from_caller)
      .allow_cpu_scalars(true);
  return config;
}

namespace {

// A CPU scalar converted to the kernel's input type, bound at the next slot.
template <class T>
void bind_value_as(const at::TensorIteratorBase& iter, int arg, KernelFunction& kernel) {
  kernel.bind(c10::fetch_and_cast<T>(iter.dtype(arg), iter.data_ptr(arg)));
}

void bind_value(const at::TensorIteratorBase& iter, int arg, c10::ScalarType as, KernelFunction& kernel) {
  switch (as) {
#define MPS_OPS_BIND_VALUE(CPP, NAME) \
  case c10::ScalarType::NAME:         \
    return bind_value_as<CPP>(iter, arg, kernel);
    AT_FORALL_SCALAR_TYPES_AND3(Bool, Half, BFloat16, MPS_OPS_BIND_VALUE)
#undef MPS_OPS_BIND_VALUE
    case c10::ScalarType::UInt16: return bind_value_as<uint16_t>(iter, arg, kernel);
    case c10::ScalarType::UInt32: return bind_value_as<uint32_t>(iter, arg, kernel);
    case c10::ScalarType::UInt64: return bind_value_as<uint64_t>(iter, arg, kernel);
    default: TORCH_CHECK(false, "mps_ops: cannot bind a scalar of dtype ", as);
  }
}

uint32_t ceil_div(uint32_t n, uint32_t d) { return n / d + (n % d != 0); }

size_t operand_span_bytes(const at::TensorIteratorBase& iter, int arg) {
  size_t last = 0;
  const auto strides = iter.strides(arg);
  const auto shape = iter.shape();
  for (size_t d = 0; d < shape.size(); ++d) {
    last += static_cast<size_t>(shape[d] - 1) * static_cast<size_t>(std::abs(strides[d]));
  }
  return last + iter.element_size(arg);
}

// A 0-dim CPU input: bound as a value. (is_cpu_scalar alone also accepts any
// one-element CPU tensor, which in the emulator would take a path a Mac never
// takes for device tensors.)
bool is_value_operand(const at::TensorIteratorBase& iter, int arg) {
  return arg >= iter.noutputs() && iter.is_cpu_scalar(arg) && iter.tensor_base(arg).dim() == 0;
}

}  // namespace

void exec_elementwise(KernelCache& kernels, at::TensorIteratorBase& iter, c10::ScalarType in_dtype,
                      KernelParams params, bool condition_first) {
  if (iter.numel() == 0) {
    return;
  }
  if (!iter.can_use_32bit_indexing()) {
    for (auto& piece : iter.with_32bit_indexing()) {
      exec_elementwise(kernels, piece, in_dtype, params, condition_first);
    }
    return;
  }
  // More dims than the kernels' tables hold (max_ndim, counting only dims
  // of size > 1): one pass per index of the outermost such dim.
  int wide_dims = 0, outermost = -1;
  for (int d = 0; d < iter.ndim(); ++d) {
    if (iter.shape()[d] > 1) {
      ++wide_dims;
      outermost = d;
    }
  }
  if (wide_dims > max_ndim) {
    for (int64_t i = 0; i < iter.shape()[outermost]; ++i) {
      at::TensorIterator piece(iter);
      piece.narrow(outermost, i, 1);
      exec_elementwise(kernels, piece, in_dtype, params, condition_first);
    }
    return;
  }
  // Every element-wise kernel takes a params slot; a functor without
  // parameters gets an empty one (elementwise.h: make_functor).
  static const no_params none{};
  const KernelParams with_params = params.empty() ? KernelParams(none) : params;
  const int n_ops = iter.ntensors();
  const int n_out = iter.noutputs();
  const c10::ScalarType out_dtype = iter.dtype(0);
  // Single-output dense kernels over 2-byte elements in and out read and
  // write them two per 32-bit word (elementwise.h: paired_dense_elements):
  // only where every tensor operand starts on a word; else strided.
  const bool paired = n_out == 1 && c10::elementSize(in_dtype) == 2 && c10::elementSize(out_dtype) == 2;
  int value_operands = 0, value_arg = -1;
  bool dense = iter.ndim() <= 1;
  for (int arg = 0; arg < n_ops; ++arg) {
    if (is_value_operand(iter, arg)) {
      ++value_operands;
      value_arg = arg;
      continue;
    }
    const bool condition = condition_first && arg == n_out;
    TORCH_INTERNAL_ASSERT(arg < n_out || iter.dtype(arg) == (condition ? at::kBool : in_dtype), kernels.op(),
                          ": tensor inputs must have the kernel's input dtype");
    if (iter.ndim() == 1 && iter.strides(arg)[0] != static_cast<int64_t>(iter.element_size(arg))) {
      dense = false;
    }
    if (paired && reinterpret_cast<uintptr_t>(iter.data_ptr(arg)) % 4 != 0) {
      dense = false;
    }
  }

  Variant variant = Variant::strided;
  const bool binary = n_out == 1 && n_ops == 3;
  if (dense && value_operands == 0) {
    variant = Variant::dense;
  } else if (dense && value_operands == 1 && binary) {
    variant = value_arg == 1 ? Variant::dense_lhs_scalar : Variant::dense_rhs_scalar;
  }

  KernelFunction kernel(kernels.get(variant, out_dtype, in_dtype));
  for (int arg = 0; arg < n_ops; ++arg) {
    if (is_value_operand(iter, arg)) {
      bind_value(iter, arg, condition_first && arg == n_out ? at::kBool : in_dtype, kernel);
    } else {
      kernel.bind(BufferSpan{iter.tensor_base(arg), iter.data_ptr(arg), operand_span_bytes(iter, arg)});
    }
  }
  kernel.mark_operands();
  const uint32_t numel = static_cast<uint32_t>(iter.numel());
  const uint32_t per_thread = elements_per_thread(c10::elementSize(in_dtype));
  if (variant != Variant::strided) {
    kernel.bind(numel, with_params);
    kernel.dispatch(Dim3{tiled_threads(numel, per_thread), 1, 1});
    return;
  }
  // Dims of size 1 are left out; an iteration without others is one
  // element: shape [1], every stride 0. A 32-bit indexable piece has every
  // size and byte offset below 2**31, so the tables are 32-bit.
  std::vector<int> kept;
  for (int d = 0; d < iter.ndim(); ++d) {
    if (iter.shape()[d] > 1) {
      kept.push_back(d);
    }
  }
  const int ndim = std::max<int>(1, static_cast<int>(kept.size()));
  uint32_t sizes[max_ndim];
  int32_t strides[max_ndim * 5];
  TORCH_INTERNAL_ASSERT(n_ops <= 5, kernels.op(), ": too many operands");
  for (int d = 0; d < ndim; ++d) {
    sizes[d] = kept.empty() ? 1 : static_cast<uint32_t>(iter.shape()[kept[d]]);
    for (int arg = 0; arg < n_ops; ++arg) {
      strides[arg * ndim + d] = kept.empty() ? 0 : static_cast<int32_t>(iter.strides(arg)[kept[d]]);
    }
  }
  kernel.bind(c10::ArrayRef<uint32_t>(sizes, ndim), c10::ArrayRef<int32_t>(strides, ndim * n_ops),
              static_cast<uint32_t>(ndim), with_params);
  const uint32_t inner = sizes[0];
  kernel.dispatch(Dim3{ceil_div(inner, per_thread), numel / inner, 1});
}

}  // namespace mps_ops
