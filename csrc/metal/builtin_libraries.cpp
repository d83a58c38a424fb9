#include "builtin_libraries.h"

#include "embedded_kernels.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>
#include <exception>

namespace mps_ops {

bool force_source_requested() {
  const char* value = std::getenv(force_source_variable);
  return value != nullptr && std::strcmp(value, "1") == 0;
}

BuiltinLibraries::BuiltinLibraries(const EmbeddedKernels& embedded, bool force_source)
    : embedded_(embedded), compiles_sources_(force_source || embedded.metallib_size == 0) {
  by_name_.reserve(embedded.kernel_count);
  for (size_t i = 0; i < embedded.kernel_count; ++i) {
    const mps_ops_embedded_kernel& kernel = embedded.kernels[i];
    // tools/macos_build.py writes valid indices; a broken build stops here.
    TORCH_INTERNAL_ASSERT(kernel.source < embedded.source_count, kernel.host_name,
                          ": source index ", kernel.source, " of ", embedded.source_count);
    by_name_.emplace(kernel.host_name, &kernel);
  }
  sources_.reserve(embedded.source_count);
  for (size_t i = 0; i < embedded.source_count; ++i) {
    sources_.push_back(std::make_unique<OnceLibrary>());
  }
}

KernelHandle* BuiltinLibraries::find_kernel(const std::string& host_name) {
  const auto found = by_name_.find(host_name);
  if (found == by_name_.end()) {
    return nullptr;
  }
  const mps_ops_embedded_kernel& kernel = *found->second;
  MetalLibrary& library = library_of(host_name, kernel);
  KernelHandle* handle =
      library.find_kernel(host_name, KernelSlots{kernel.buffer_slots, kernel.threadgroup_slots});
  TORCH_CHECK(handle != nullptr, "mps_ops: ", host_name, " is in the build's kernel table but not in ",
              library.label(), " (the embedded library and table disagree: rebuild)");
  return handle;
}

MetalLibrary& BuiltinLibraries::library_of(const std::string& host_name,
                                           const mps_ops_embedded_kernel& kernel) {
  if (!compiles_sources_) {
    return make_once(metallib_, host_name, false, 0);
  }
  return make_once(*sources_[kernel.source], host_name, true, kernel.source);
}

MetalLibrary& BuiltinLibraries::make_once(OnceLibrary& once, const std::string& host_name,
                                          bool from_source, size_t source) {
  std::lock_guard<std::mutex> lock(once.mutex);
  if (!once.tried) {
    once.tried = true;
    // Compiling or loading again would fail the same way and cost as much
    // (seconds for a source file): the error is kept with the library.
    try {
      once.library = from_source ? MetalLibrary::from_source(embedded_.sources[source],
                                                             embedded_.source_names[source])
                                 : MetalLibrary::from_metallib(embedded_.metallib,
                                                               embedded_.metallib_size,
                                                               "mps_ops.metallib");
    } catch (const c10::Error& e) {
      once.error = e.what_without_backtrace();
    } catch (const std::exception& e) {
      once.error = e.what();
    }
    if (!once.library && !from_source) {
      once.error += std::string("\n(set ") + force_source_variable +
                    "=1 before importing mps_ops to compile the kernels from their embedded "
                    "sources instead)";
    }
  }
  TORCH_CHECK(once.library != nullptr, "mps_ops: no library for ", host_name, ": ", once.error);
  return *once.library;
}

}  // namespace mps_ops
