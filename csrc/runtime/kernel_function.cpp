#include "kernel_function.h"

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
  }
  ArgSlot& s = args()[index];
  s = ArgSlot{};
  s.bound = true;
  return s;
}

void KernelFunction::set_tensor(int index, const at::TensorBase& tensor) {
  set_buffer(index, tensor, tensor.const_data_ptr(), view_span_bytes(tensor));
}

void KernelFunction::set_buffer(int index, const at::TensorBase& owner, const void* data,
                                size_t span_bytes) {
  ArgSlot& s = slot(index);
  const void* base = owner.storage().data();
  s.storage = base;
  s.offset = static_cast<size_t>(static_cast<const char*>(data) - static_cast<const char*>(base));
  s.bytes = span_bytes;
}

void KernelFunction::set_bytes(int index, const void* data, size_t size) {
  const size_t aligned = (arena_used_ + 15) & ~size_t(15);
  // Compared without adding to size: a huge size must not wrap around.
  TORCH_CHECK(size <= sizeof(arena_) && aligned <= sizeof(arena_) - size, "mps_ops: more than ",
              sizeof(arena_), " bytes of inline kernel arguments (", size, " more asked for)");
  std::memcpy(arena_ + aligned, data, size);
  ArgSlot& s = slot(index);
  s.inline_data = arena_ + aligned;
  s.bytes = size;
  arena_used_ = aligned + size;
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
    const uint32_t limit = b.max_threads_per_group(kernel_);
    group = Dim3{std::min(threads.x, limit), 1, 1};
    group.y = std::max<uint32_t>(1, std::min(threads.y, limit / group.x));
    group.z = std::max<uint32_t>(1, std::min(threads.z, limit / (group.x * group.y)));
  }
  if (profile::enabled.load(std::memory_order_relaxed)) {
    DispatchRecord r{b.kernel_name(kernel_), threads, group, {}, operand_count_};
    for (int i = 0; i < count_; ++i) {
      r.buffers.push_back(args()[i].bound ? args()[i].bytes : 0);
    }
    profile::record(std::move(r));
  }
  b.dispatch(kernel_, args(), count_, has_threadgroup_memory_ ? threadgroup_lengths_ : nullptr, threads,
             group);
}

}  // namespace mps_ops
