#include "kernel_function.h"

#include "backend.h"
#include "kernel_flag.h"
#include "profile.h"

#include <c10/util/Exception.h>

#include <algorithm>

namespace mps_ops {

size_t view_span_bytes(const at::TensorBase& tensor) {
  if (tensor.numel() == 0) {
    return 0;
  }
  size_t last = 0;
  for (int64_t d = 0; d < tensor.dim(); ++d) {
    last += static_cast<size_t>(tensor.size(d) - 1) * static_cast<size_t>(std::abs(tensor.stride(d)));
  }
  return (last + 1) * tensor.element_size();
}

ArgSlot& KernelFunction::slot(int index) {
  TORCH_CHECK(index >= 0 && index < max_kernel_args, "mps_ops: argument index ", index,
              " is outside Metal's buffer table [0, ", max_kernel_args, ")");
  for (; count_ <= index; ++count_) {
    args()[count_] = ArgSlot{};
    element_sizes_[count_] = 0;
  }
  ArgSlot& s = args()[index];
  s = ArgSlot{};
  s.bound = true;
  element_sizes_[index] = 0;
  next_slot_ = index + 1;
  return s;
}

void KernelFunction::check_no_slot_bound() const {
  TORCH_INTERNAL_ASSERT(next_slot_ == 0, "mps_ops: operands are bound first, from slot 0");
}

KernelFunction& KernelFunction::bind_operand_list(std::initializer_list<const at::Tensor*> tensors) {
  check_no_slot_bound();
  for (const at::Tensor* tensor : tensors) {
    bind_tensor(*tensor);
  }
  mark_operands();
  return *this;
}

KernelFunction& KernelFunction::bind_operand_list(c10::ArrayRef<at::Tensor> tensors) {
  check_no_slot_bound();
  for (const at::Tensor& tensor : tensors) {
    bind_tensor(tensor);
  }
  mark_operands();
  return *this;
}

void KernelFunction::bind_tensor(const at::TensorBase& tensor) {
  if (tensor.device().type() != backend().device_type()) {
    // A 0-dim CPU value beside device tensors (a Python number's tensor, an
    // optimizer's step or grad scale): no kernel may read host memory, so its
    // bytes travel inline, as Metal's setBytes.
    TORCH_CHECK(tensor.is_cpu() && tensor.dim() == 0, "mps_ops: ", backend().kernel_name(kernel_), ": an operand on ",
                tensor.device(), " with ", tensor.dim(), " dims; the ", backend().name(),
                " backend's kernels read ", c10::DeviceTypeName(backend().device_type(), true),
                " tensors (and 0-dim CPU values)");
    set_bytes(next_slot_, tensor.const_data_ptr(), tensor.element_size());
    return;
  }
  bind_span(BufferSpan{tensor, tensor.const_data_ptr(), view_span_bytes(tensor)});
}

void KernelFunction::bind_span(const BufferSpan& span) {
  const int index = next_slot_;
  set_buffer(index, span.owner, span.data, span.bytes);
  element_sizes_[index] = static_cast<uint8_t>(span.owner.element_size());
}

void KernelFunction::bind_flag(const KernelFlag& flag) {
  const int index = next_slot_;
  ArgSlot& s = slot(index);
  s.storage = flag.storage();
  s.offset = flag.offset();
  s.bytes = static_cast<size_t>(flag.words()) * sizeof(int32_t);
  element_sizes_[index] = sizeof(int32_t);
  flag.bound_ = true;
}

void KernelFunction::set_buffer(int index, const at::TensorBase& owner, const void* data,
                                size_t span_bytes) {
  ArgSlot& s = slot(index);
  storages_[index] = owner.storage();
  const void* base = owner.storage().data();
  s.storage = base;
  s.offset = static_cast<size_t>(static_cast<const char*>(data) - static_cast<const char*>(base));
  s.bytes = span_bytes;
}

void KernelFunction::set_bytes(int index, const void* data, size_t size) {
  // A slot set again with bytes that fit where its last ones lie (a C ABI
  // caller updating one value between dispatches) reuses that place: else
  // each update took more of the arena, which ran out after some 60.
  unsigned char* place = nullptr;
  size_t used = arena_used_;
  if (index >= 0 && index < count_ && args()[index].inline_data != nullptr && args()[index].bytes >= size) {
    place = arena_ + (static_cast<const unsigned char*>(args()[index].inline_data) - arena_);
  } else {
    const size_t aligned = (arena_used_ + 15) & ~size_t(15);
    // Compared without adding to size: a huge size must not wrap around.
    TORCH_CHECK(size <= sizeof(arena_) && aligned <= sizeof(arena_) - size, "mps_ops: more than ",
                sizeof(arena_), " bytes of inline kernel arguments (", size, " more asked for)");
    place = arena_ + aligned;
    used = aligned + size;
  }
  if (size > 0) {
    std::memcpy(place, data, size);  // an empty ArrayRef's data may be null
  }
  ArgSlot& s = slot(index);  // checks index: the arena is taken only once it passes
  s.inline_data = place;
  s.bytes = size;
  arena_used_ = used;
}

void KernelFunction::set_threadgroup_memory(int index, uint32_t bytes) {
  TORCH_CHECK(index >= 0 && index < max_kernel_args, "mps_ops: threadgroup argument index ", index,
              " is outside [0, ", max_kernel_args, ")");
  if (!has_threadgroup_memory_) {
    std::fill(std::begin(threadgroup_lengths_), std::end(threadgroup_lengths_), 0u);
    has_threadgroup_memory_ = true;
  }
  threadgroup_lengths_[index] = bytes;
}

void KernelFunction::dispatch(Dim3 threads, Dim3 group) {
  Backend& b = backend();
  if (threads.x == 0 || threads.y == 0 || threads.z == 0) {
    return;  // an empty grid runs nothing (and has no group size to choose)
  }
  if (group.x == 0 && group.y == 0 && group.z == 0) {
    // At most default_group_threads: a GPU keeps whole threadgroups
    // resident, so a kernel whose registers allow 1.5 groups of 1,024 runs
    // one (H100: glu_jvp and fractional_max_pool at half occupancy), where
    // groups of 256 fill the registers to within a quarter group.
    const uint32_t limit = std::min(b.max_threads_per_group(kernel_), default_group_threads);
    group = Dim3{std::min(threads.x, limit), 1, 1};
    group.y = std::max<uint32_t>(1, std::min(threads.y, limit / group.x));
    group.z = std::max<uint32_t>(1, std::min(threads.z, limit / (group.x * group.y)));
  }
  if (profile::enabled.load(std::memory_order_relaxed)) {
    DispatchRecord r{b.kernel_name(kernel_), threads, group, {}, operand_count_, {}, {}};
    for (int i = 0; i < count_; ++i) {
      const ArgSlot& a = args()[i];
      r.buffers.push_back(a.bound ? a.bytes : 0);
      r.inline_slots.push_back(a.inline_data != nullptr);
      r.element_sizes.push_back(element_sizes_[i]);
    }
    profile::record(std::move(r));
  }
  b.dispatch(kernel_, args(), count_, has_threadgroup_memory_ ? threadgroup_lengths_ : nullptr, threads,
             group);
}

uint32_t power_of_two_group(int64_t n, uint32_t cap, const KernelHandle* kernel) {
  const uint32_t limit = std::min(cap, backend().max_threads_per_group(kernel));
  uint32_t threads = 1;
  while (threads * 2 <= limit && (threads < 32 || threads < n)) {
    threads *= 2;
  }
  return threads;
}

}  // namespace mps_ops
