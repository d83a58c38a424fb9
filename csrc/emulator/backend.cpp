#include "backend.h"

#include "../runtime/declared_slots.h"
#include "checked_memory.h"
#include "fiber_pool.h"
#include "kernel_table.h"
#include "options.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <memory>
#include <atomic>
#include <mutex>
#include <vector>

namespace mps_ops {

struct KernelHandle {
  mps_ops_emu::kernel_entry entry;
};

namespace {

// Metal's limits on Apple GPUs: threads per threadgroup of a compute
// pipeline; a threadgroup's memory (maxThreadgroupMemoryLength).
constexpr uint32_t max_group_threads = 1024;
constexpr uint64_t max_threadgroup_bytes = 32768;

// What a pipeline of the kernel allows at most: its declared
// max_total_threads_per_threadgroup, else Metal's limit.
uint32_t declared_max_threads(const mps_ops_emu::kernel_entry& entry) {
  return entry.max_threads != 0 ? std::min(entry.max_threads, max_group_threads) : max_group_threads;
}

struct LaunchCall {
  mps_ops_emu::launch_fn launch;
  const mps_ops_emu::dispatch_args* args;
};

void run_launch(const void* raw) {
  const auto* call = static_cast<const LaunchCall*>(raw);
  call->launch(*call->args);
}

std::string describe_range(const mps_ops_emu::memory_range& range) {
  switch (range.kind) {
    case mps_ops_emu::buffer_memory:
      return "buffer(" + std::to_string(range.index) + ")";
    case mps_ops_emu::threadgroup_argument_memory:
      return "threadgroup memory argument [[threadgroup(" + std::to_string(range.index) + ")]]";
    case mps_ops_emu::threadgroup_array_memory:
      return std::string("threadgroup memory (array '") + range.name + "')";
  }
  return "memory";
}

// A bounds-checked access that failed (bounded_ptr.h): never returns.
void fail_access(void*, const mps_ops_emu::access_fault& fault) {
  char message[512];
  {
    const std::string what = describe_range(*fault.range) + " accessed at byte offset " +
                             std::to_string(fault.offset) + " (" + std::to_string(fault.bytes) +
                             " bytes), outside its " + std::to_string(fault.range->bytes) + " bound bytes";
    std::snprintf(message, sizeof(message), "%s", what.c_str());
  }  // no std::string may be alive across the jump
  emulator::abort_dispatch(message);
}

class EmulatorBackend final : public Backend {
 public:
  const char* name() const override { return "emulator"; }
  c10::DeviceType device_type() const override { return c10::DeviceType::CPU; }

  KernelHandle* find_kernel(const std::string& host_name) override {
    return handle_for(emulator::builtin_kernels(), host_name);
  }

  void* load_library(const std::string& path) override {
    return const_cast<emulator::KernelMap*>(&emulator::load_library_file(path));
  }

  std::vector<std::string> library_kernel_names(void* library) override {
    std::vector<std::string> names;
    for (const auto& kv : *static_cast<emulator::KernelMap*>(library)) names.push_back(kv.first);
    return names;
  }

  KernelHandle* find_library_kernel(void* library, const std::string& name) override {
    return handle_for(*static_cast<emulator::KernelMap*>(library), name);
  }

  void* load_metallib(const void*, size_t) override {
    TORCH_CHECK_NOT_IMPLEMENTED(false,
                                "mps_ops: a .metallib holds compiled Apple GPU code, which the emulator "
                                "backend cannot run; pass the Metal source to compile_shader instead");
  }

  void run_command_block(void (*fn)(void*), void* context) override { fn(context); }

  // Kernels read and write host memory here; dispatches run before they return.
  HostVisible allocate_host_visible(size_t bytes) override {
    void* block = ::operator new(bytes, std::align_val_t{16});  // kept for the process
    std::memset(block, 0, bytes);
    return HostVisible{block, block};
  }
  // Every dispatch has run before it returned, but marks are set only by a
  // wait, as on Metal, where a mark is a command buffer's completion and the
  // buffer is committed by a sync (MPSStream): deferred error checks then run
  // here when they would there (error_checks.h), and their tests can see them
  // wait.
  const void* mark_when_done(const DoneWord& done) override {
    std::lock_guard<std::mutex> lock(marks_mutex_);
    marks_.push_back(const_cast<int32_t*>(done.host));
    return nullptr;
  }
  void wait_until_marked(const DoneWord&, const void*) override {
    std::lock_guard<std::mutex> lock(marks_mutex_);
    for (int32_t* word : marks_) {
      __atomic_store_n(word, 1, __ATOMIC_RELEASE);  // read by other threads' checks (acquire)
    }
    marks_.clear();
  }

  const char* kernel_name(const KernelHandle* kernel) const override {
    return kernel->entry.host_name;
  }

  uint32_t max_threads_per_group(const KernelHandle* kernel) const override {
    return std::min(declared_max_threads(kernel->entry),
                    emulator::options().pipeline_thread_limit.load(std::memory_order_relaxed));
  }

  void dispatch(const KernelHandle* kernel, const ArgSlot* args, int count,
                const uint32_t* threadgroup_lengths, Dim3 threads, Dim3 group) override;

 private:
  KernelHandle* handle_for(const emulator::KernelMap& kernels, const std::string& name) {
    auto it = kernels.find(name);
    if (it == kernels.end()) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    auto& handle = handles_[&it->second];
    if (!handle) handle = std::make_unique<KernelHandle>(KernelHandle{it->second});
    return handle.get();
  }

  std::mutex mutex_;
  std::map<const mps_ops_emu::kernel_entry*, std::unique_ptr<KernelHandle>> handles_;
  std::mutex marks_mutex_;
  std::vector<int32_t*> marks_;  // marked, not yet set
};

void EmulatorBackend::dispatch(const KernelHandle* kernel, const ArgSlot* args, int count,
                               const uint32_t* threadgroup_lengths, Dim3 threads, Dim3 group) {
  const auto& entry = kernel->entry;
  const uint32_t limit = declared_max_threads(entry);
  TORCH_CHECK(group.x >= 1 && group.y >= 1 && group.z >= 1 && uint64_t(group.x) * group.y * group.z <= limit,
              "mps_ops: ", entry.host_name, ": threadgroup size (", group.x, ", ", group.y, ", ",
              group.z, ") must be between 1 and ", limit, " threads");
  if (threads.x == 0 || threads.y == 0 || threads.z == 0) {
    return;
  }
  static_assert(mps_ops_emu::max_buffers == max_kernel_args, "one argument table size");
  check_declared_slots(entry.host_name, entry.buffer_mask, entry.threadgroup_mask, args, count,
                       threadgroup_lengths);
  if (emulator::options().dry_run.load(std::memory_order_relaxed)) {
    return;
  }
  auto d = std::make_unique<mps_ops_emu::dispatch_args>();
  const bool checked = emulator::options().checked.load(std::memory_order_relaxed);
  emulator::CheckedBuffers shadows;
  for (int i = 0; i < count; ++i) {
    if (!args[i].bound) continue;
    void* address = args[i].inline_data
                        ? const_cast<void*>(args[i].inline_data)
                        : static_cast<char*>(const_cast<void*>(args[i].storage)) + args[i].offset;
    d->buffers[i] = checked ? shadows.add(i, address, args[i].bytes) : address;
    d->buffer_lengths[i] = args[i].bytes;
  }
  // Threadgroup memory of [[threadgroup(N)]] arguments, one arena per dispatch.
  std::vector<unsigned char> arena;
  uint64_t arena_bytes = 0;
  for (int i = 0; i < mps_ops_emu::max_buffers; ++i) {
    const uint32_t length = threadgroup_lengths ? threadgroup_lengths[i] : 0;
    d->threadgroup_lengths[i] = length;
    arena_bytes += (uint64_t(length) + 15) & ~uint64_t(15);
  }
  // Checked before anything runs, as Metal validates a dispatch.
  const uint64_t declared_bytes = entry.threadgroup_bytes ? entry.threadgroup_bytes() : 0;
  TORCH_CHECK(arena_bytes + declared_bytes <= max_threadgroup_bytes, "mps_ops: ", entry.host_name,
              ": threadgroup memory (", declared_bytes, " bytes declared plus ", arena_bytes,
              " bytes of threadgroup arguments) exceeds Metal's 32 KiB");
  if (arena_bytes) {
    unsigned char* guarded = checked ? shadows.add_threadgroup(arena_bytes) : nullptr;
    if (guarded == nullptr) {
      arena.resize(arena_bytes);
      guarded = arena.data();
    }
    d->threadgroup_arena = guarded;
    d->threadgroup_arena_size = arena_bytes;
  }
  static std::atomic<uint64_t> dispatches{0};
  d->serial = ++dispatches;
  if (checked) {
    d->threadgroup_storage = [](void* context, uint64_t bytes) {
      return static_cast<emulator::CheckedBuffers*>(context)->add_threadgroup(bytes);
    };
    d->threadgroup_storage_context = &shadows;
  }
  d->threads = mps_ops_emu::grid3{threads.x, threads.y, threads.z};
  d->group = mps_ops_emu::grid3{group.x, group.y, group.z};
  if (emulator::options().reverse_group_order.load(std::memory_order_relaxed)) {
    d->flags |= mps_ops_emu::reverse_group_order;
  }
  d->stop = &emulator::options().stop;
  d->fail = &fail_access;
  static thread_local emulator::FiberPool fibers;
  if (entry.collective) {
    const uint32_t per_group = group.x * group.y * group.z;
    TORCH_CHECK(fibers.reserve(per_group), "mps_ops: cannot map stacks for ", per_group, " fibers");
    d->fiber_stacks = fibers.stacks();
    d->fiber_stack_size = emulator::FiberPool::stack_bytes;
    d->fiber_stack_stride = fibers.stride();
    d->fiber_records = fibers.records();
    d->fiber_count = fibers.capacity();
  }
  LaunchCall call{entry.launch, d.get()};
  const std::string fault =
      emulator::run_guarded(&run_launch, &call, checked ? &shadows : nullptr, entry.collective ? &fibers : nullptr);
  TORCH_CHECK_INDEX(fault.empty(), "mps_ops emulator", checked ? " (checked mode)" : "", ": kernel ",
                    entry.host_name, ": ", fault);
  if (checked) {
    const std::string underflow = shadows.underflow_report();
    TORCH_CHECK_INDEX(underflow.empty(), "mps_ops emulator (checked mode): kernel ", entry.host_name,
                      ": ", underflow);
  }
  // A stopped kernel ran part of its grid: raise, never return its results
  // (compile_shader's dispatch turns this into KeyboardInterrupt).
  TORCH_CHECK(emulator::options().stop == 0, "mps_ops emulator: kernel ", entry.host_name,
              " interrupted before it finished");
  TORCH_CHECK(d->error[0] == 0, "mps_ops emulator: kernel ", entry.host_name, ": ", d->error);
  if (checked) shadows.copy_back();
}

}  // namespace

Backend& emulator_backend() {
  static EmulatorBackend instance;
  return instance;
}

std::vector<std::string> emulator_kernel_names() {
  std::vector<std::string> names;
  for (const auto& kv : emulator::builtin_kernels()) names.push_back(kv.first);
  return names;
}

}  // namespace mps_ops
