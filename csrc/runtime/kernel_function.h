// One kernel dispatch being prepared: bind arguments by [[buffer(N)]] index,
// then dispatch with dispatchThreads semantics. Mirrors the calling
// convention of PyTorch's MetalKernelFunction so host stubs read alike.
#pragma once

#include "backend.h"

#include <ATen/core/TensorBase.h>

#include <cstring>
#include <initializer_list>

namespace mps_ops {

class KernelFunction {
 public:
  explicit KernelFunction(const KernelHandle* kernel) : kernel_(kernel) {}
  // Inline arguments point into this object's own arena: not copyable.
  KernelFunction(const KernelFunction&) = delete;
  KernelFunction& operator=(const KernelFunction&) = delete;

  // The tensor's whole view: storage, storage offset, and the byte span its
  // sizes and strides reach.
  void set_tensor(int index, const at::TensorBase& tensor);
  // A buffer starting at `data` inside `owner`'s storage (TensorIterator
  // operands, whose data pointers may be advanced past the view's start).
  void set_buffer(int index, const at::TensorBase& owner, const void* data, size_t span_bytes);
  void set_bytes(int index, const void* data, size_t size);
  template <class T>
  void set_value(int index, const T& value) {
    set_bytes(index, &value, sizeof(T));
  }

  // The first n slots are the op's operands (outputs, then inputs); the rest
  // are metadata. Only mps_ops.profile() reads it (bytes moved vs bound).
  void set_operand_count(int n) { operand_count_ = n; }

  // Slots 0.. take these tensors, which are the op's operands; returns the
  // first slot after them, where parameters go.
  template <class Tensors>
  int set_operands(const Tensors& tensors) {
    int slot = 0;
    for (const auto* tensor : tensors) {
      set_tensor(slot++, *tensor);
    }
    set_operand_count(slot);
    return slot;
  }
  int set_operands(std::initializer_list<const at::TensorBase*> tensors) {
    return set_operands<std::initializer_list<const at::TensorBase*>>(tensors);
  }

  // setThreadgroupMemoryLength for a [[threadgroup(index)]] argument.
  void set_threadgroup_memory(int index, uint32_t bytes);

  // group: threads per threadgroup; all zero means min(threads, the kernel's
  // limit). An empty grid dispatches nothing.
  void dispatch(Dim3 threads, Dim3 group = Dim3{0, 0, 0});

 private:
  ArgSlot& slot(int index);

  const KernelHandle* kernel_;
  // Slots [0, count_) are initialised; the rest are raw storage, so a
  // KernelFunction costs nothing for the slots a kernel does not use.
  ArgSlot* args() { return reinterpret_cast<ArgSlot*>(arg_storage_); }
  alignas(ArgSlot) unsigned char arg_storage_[sizeof(ArgSlot) * max_kernel_args];
  int count_ = 0;
  int operand_count_ = -1;
  uint32_t threadgroup_lengths_[max_kernel_args];
  bool has_threadgroup_memory_ = false;
  // setBytes payloads live here until dispatch copies them.
  alignas(16) unsigned char arena_[1024];
  size_t arena_used_ = 0;
};

// Bytes between the lowest and the highest byte a view can reach.
size_t view_span_bytes(const at::TensorBase& tensor);

}  // namespace mps_ops
