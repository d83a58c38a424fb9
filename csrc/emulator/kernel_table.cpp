#include "kernel_table.h"

#include <c10/util/Exception.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>

namespace mps_ops_emu {

namespace {
mps_ops::emulator::KernelMap& mutable_builtins() {
  static mps_ops::emulator::KernelMap kernels;
  return kernels;
}
}  // namespace

void register_kernel(const kernel_entry& entry) {
  auto inserted = mutable_builtins().emplace(entry.host_name, entry);
  if (!inserted.second) {
    // Two kernels under one host name: Apple's linker would reject the
    // library too. Fail at load, loudly, rather than run the wrong one.
    fprintf(stderr, "mps_ops emulator: host name %s defined in both %s and %s\n", entry.host_name,
            inserted.first->second.source_file, entry.source_file);
    abort();
  }
}

}  // namespace mps_ops_emu

namespace mps_ops::emulator {

const KernelMap& builtin_kernels() { return mps_ops_emu::mutable_builtins(); }

const KernelMap& load_library_file(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<KernelMap>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = loaded.find(path);
  if (found != loaded.end()) return *found->second;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  TORCH_CHECK(handle != nullptr, "mps_ops: cannot load compiled shader library ", path, ": ", dlerror());
  using table_fn = int (*)(const mps_ops_emu::kernel_entry**);
  auto table = reinterpret_cast<table_fn>(dlsym(handle, "mps_ops_emu_library"));
  TORCH_CHECK(table != nullptr, "mps_ops: ", path, " is not an mps_ops shader library");
  const mps_ops_emu::kernel_entry* entries = nullptr;
  const int count = table(&entries);
  auto kernels = std::make_unique<KernelMap>();
  for (int i = 0; i < count; ++i) {
    TORCH_CHECK(kernels->emplace(entries[i].host_name, entries[i]).second,
                "mps_ops: compiled shader library defines ", entries[i].host_name, " twice");
  }
  return *loaded.emplace(path, std::move(kernels)).first->second;
}

}  // namespace mps_ops::emulator
