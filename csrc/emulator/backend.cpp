#include "backend.h"

#include <mps_ops_emulator/kernel_abi.h>

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <map>
#include <mutex>

namespace mps_ops_emu {

namespace {
// Filled by static registrars of the kernel translation units before main;
// read-only afterwards.
std::map<std::string, kernel_entry>& table() {
  static std::map<std::string, kernel_entry> kernels;
  return kernels;
}
}  // namespace

void register_kernel(const kernel_entry& entry) {
  auto inserted = table().emplace(entry.host_name, entry);
  if (!inserted.second) {
    // Two kernels under one host name: Apple's linker would reject the
    // library too. Fail at load, loudly, rather than run the wrong one.
    fprintf(stderr, "mps_ops emulator: host name %s defined in both %s and %s\n", entry.host_name,
            inserted.first->second.source_file, entry.source_file);
    abort();
  }
}

}  // namespace mps_ops_emu

namespace mps_ops {

struct KernelHandle {
  mps_ops_emu::kernel_entry entry;
};

namespace {

// Metal's limit on a compute pipeline's threads per threadgroup on Apple GPUs.
constexpr uint32_t max_group_threads = 1024;

class EmulatorBackend final : public Backend {
 public:
  const char* name() const override { return "emulator"; }
  c10::DeviceType device_type() const override { return c10::DeviceType::CPU; }

  KernelHandle* find_kernel(const std::string& host_name) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto cached = handles_.find(host_name);
    if (cached != handles_.end()) {
      return cached->second.get();
    }
    auto it = mps_ops_emu::table().find(host_name);
    if (it == mps_ops_emu::table().end()) {
      return nullptr;
    }
    auto handle = std::make_unique<KernelHandle>(KernelHandle{it->second});
    KernelHandle* raw = handle.get();
    handles_.emplace(host_name, std::move(handle));
    return raw;
  }

  const char* kernel_name(const KernelHandle* kernel) const override {
    return kernel->entry.host_name;
  }

  uint32_t max_threads_per_group(const KernelHandle*) const override { return max_group_threads; }

  void dispatch(const KernelHandle* kernel, const ArgSlot* args, int count, Dim3 threads,
                Dim3 group) override {
    const auto& entry = kernel->entry;
    TORCH_CHECK(group.x >= 1 && group.y >= 1 && group.z >= 1 &&
                    uint64_t(group.x) * group.y * group.z <= max_group_threads,
                "mps_ops: ", entry.host_name, ": threadgroup size (", group.x, ", ", group.y, ", ",
                group.z, ") must be between 1 and ", max_group_threads, " threads");
    if (threads.x == 0 || threads.y == 0 || threads.z == 0) {
      return;
    }
    mps_ops_emu::dispatch_args d{};
    for (int i = 0; i < count; ++i) {
      if (!args[i].bound) {
        continue;
      }
      d.buffers[i] = args[i].inline_data
                         ? const_cast<void*>(args[i].inline_data)
                         : static_cast<char*>(const_cast<void*>(args[i].storage)) + args[i].offset;
    }
    for (int i = 0; i < mps_ops_emu::max_buffers; ++i) {
      const bool declared = entry.buffer_mask & (1u << i);
      TORCH_CHECK(!declared || (i < count && args[i].bound), "mps_ops: ", entry.host_name,
                  ": buffer(", i, ") is declared by the kernel but nothing is bound to it");
    }
    d.threads = mps_ops_emu::grid3{threads.x, threads.y, threads.z};
    d.group = mps_ops_emu::grid3{group.x, group.y, group.z};
    entry.launch(d);
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<KernelHandle>> handles_;
};

}  // namespace

Backend& emulator_backend() {
  static EmulatorBackend instance;
  return instance;
}

std::vector<std::string> emulator_kernel_names() {
  std::vector<std::string> names;
  for (const auto& kv : mps_ops_emu::table()) {
    names.push_back(kv.first);
  }
  return names;
}

}  // namespace mps_ops
