// One kernel dispatch being prepared: bind arguments in the order of the
// kernel's parameters, then dispatch with dispatchThreads semantics.
//
// Host stubs bind by position, as PyTorch's mtl_setArgs does: each bind()
// argument takes the next [[buffer(N)]] slot, so a stub lists its arguments in
// the kernel's order and never writes a slot number. test/test_bindings.py
// checks every stub's bindings against the kernel signatures the prepass reads.
#pragma once

#include "backend.h"
#include "kernel_params.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/TensorBase.h>
#include <c10/util/ArrayRef.h>

#include <cstring>
#include <initializer_list>
#include <type_traits>

namespace mps_ops {

// The threads of a threadgroup a dispatch gets when it names none (a multiple
// of 32, the SIMD width of Apple GPUs and NVIDIA's warps).
inline constexpr uint32_t default_group_threads = 256;

// A buffer that starts at `data` inside `owner`'s storage and spans `bytes`
// (TensorIterator operands, whose data pointers may be advanced past the
// view's start, and pieces of a tensor).
class KernelFlag;

struct BufferSpan {
  const at::TensorBase& owner;
  const void* data;
  size_t bytes;
};

class KernelFunction {
 public:
  explicit KernelFunction(const KernelHandle* kernel) : kernel_(kernel) {}
  // Inline arguments point into this object's own arena: not copyable.
  KernelFunction(const KernelFunction&) = delete;
  KernelFunction& operator=(const KernelFunction&) = delete;

  // Each argument takes the next slot:
  //   a tensor               -> a buffer over its whole view (storage offset
  //                             and the byte span its sizes and strides reach)
  //   BufferSpan             -> a buffer over that span
  //   KernelFlag             -> a buffer over its words (ints)
  //   c10::ArrayRef<T>       -> inline bytes, the elements (a sizes table)
  //   KernelParams           -> inline bytes, the struct; nothing when empty
  //   any trivially copyable -> inline bytes, the value (setBytes)
  template <class... Args>
  KernelFunction& bind(const Args&... args) {
    (bind_one(args), ...);
    return *this;
  }

  // bind(), for the op's operands (outputs, then inputs): they take the first
  // slots, and mps_ops.profile() tells them from the metadata and parameters
  // bound after them.
  template <class... Args>
  KernelFunction& bind_operands(const Args&... args) {
    check_no_slot_bound();
    bind(args...);
    mark_operands();
    return *this;
  }
  // The same for a list whose length is known only at run time.
  KernelFunction& bind_operand_list(std::initializer_list<const at::Tensor*> tensors);
  KernelFunction& bind_operand_list(c10::ArrayRef<at::Tensor> tensors);
  // The slots bound so far are the op's operands (for callers that bind
  // them one by one, exec_elementwise's value operands among them).
  void mark_operands() { operand_count_ = next_slot_; }

  // Explicit slot indices, only for callers handed one by their own caller
  // (the C ABI's set_arg_*, mirroring AOTI's shim): host stubs use bind().
  void set_buffer(int index, const at::TensorBase& owner, const void* data, size_t span_bytes);
  void set_bytes(int index, const void* data, size_t size);

  // setThreadgroupMemoryLength for a [[threadgroup(index)]] argument.
  void set_threadgroup_memory(int index, uint32_t bytes);

  // group: threads per threadgroup; all zero means min(threads, the kernel's
  // limit, default_group_threads). An empty grid dispatches nothing.
  void dispatch(Dim3 threads, Dim3 group = Dim3{0, 0, 0});

 private:
  template <class T>
  struct is_array_ref : std::false_type {};
  template <class T>
  struct is_array_ref<c10::ArrayRef<T>> : std::true_type {};

  template <class T>
  void bind_one(const T& arg) {
    if constexpr (std::is_base_of_v<at::TensorBase, T>) {
      bind_tensor(arg);
    } else if constexpr (std::is_same_v<T, BufferSpan>) {
      bind_span(arg);
    } else if constexpr (std::is_same_v<T, KernelFlag>) {
      bind_flag(arg);
    } else if constexpr (std::is_same_v<T, KernelParams>) {
      if (!arg.empty()) set_bytes(next_slot_, arg.data(), arg.size());
    } else if constexpr (is_array_ref<T>::value) {
      static_assert(std::is_trivially_copyable_v<typename T::value_type>,
                    "an inline table holds plain values");
      set_bytes(next_slot_, arg.data(), arg.size() * sizeof(typename T::value_type));
    } else {
      static_assert(std::is_trivially_copyable_v<T>,
                    "bind() takes tensors, BufferSpans, ArrayRefs, KernelParams or plain values");
      static_assert(!std::is_pointer_v<T>, "bind the value or the tensor, not a pointer to it");
      set_bytes(next_slot_, &arg, sizeof(T));
    }
  }
  void bind_tensor(const at::TensorBase& tensor);
  void bind_span(const BufferSpan& span);
  void bind_flag(const KernelFlag& flag);
  void check_no_slot_bound() const;
  ArgSlot& slot(int index);

  const KernelHandle* kernel_;
  // Slots [0, count_) are initialised; the rest are raw storage, so a
  // KernelFunction costs nothing for the slots a kernel does not use.
  ArgSlot* args() { return reinterpret_cast<ArgSlot*>(arg_storage_); }
  alignas(ArgSlot) unsigned char arg_storage_[sizeof(ArgSlot) * max_kernel_args];
  int count_ = 0;
  int next_slot_ = 0;  // where bind() puts its next argument
  int operand_count_ = -1;
  // Bytes per element of the tensor bound in each buffer slot (0: unknown or
  // inline); only mps_ops.profile() reads them.
  uint8_t element_sizes_[max_kernel_args];
  uint32_t threadgroup_lengths_[max_kernel_args];
  bool has_threadgroup_memory_ = false;
  // The storages of the tensors bound, held until the KernelFunction dies
  // (a KernelFlag's memory lives for the process):
  // a slot keeps only an address, so a temporary bound (a .contiguous() copy
  // made in the call) would otherwise be freed before dispatch reads it.
  c10::Storage storages_[max_kernel_args];
  // setBytes payloads live here until dispatch copies them.
  alignas(16) unsigned char arena_[1024];
  size_t arena_used_ = 0;
};

// Bytes between the lowest and the highest byte a view can reach.
size_t view_span_bytes(const at::TensorBase& tensor);

// Threads of one threadgroup that takes a whole problem of n items with
// tree reductions (ldl_factor, eig): a power of two from one SIMD group (32)
// up to at least n, at most `cap` and the pipeline's own limit (Metal's
// maxTotalThreadsPerThreadgroup falls for kernels that use many registers).
uint32_t power_of_two_group(int64_t n, uint32_t cap, const KernelHandle* kernel);

}  // namespace mps_ops
