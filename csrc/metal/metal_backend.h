// The Metal side of the backend interface (macOS). C++ only: no Objective-C
// type appears here, so host code and bindings include it as plain C++. The
// implementation: metal_library.mm (MetalLibrary) and metal_backend.mm (the
// Backend), the project's only Objective-C++, and builtin_libraries.cpp.
//
// The kernels built into the extension come from what the build embedded
// (embedded_kernels.h, written by tools/macos_build.py): a metallib loaded
// from memory with newLibraryWithData, or, without one or with
// MPS_OPS_METAL_FROM_SOURCE=1, each .metal file's source compiled with
// newLibraryWithSource (MSL 3.1, fast math off) when one of its kernels is
// first looked up (builtin_libraries.h). Host names are the same either way.
#pragma once

#include "../runtime/backend.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mps_ops {

// The Metal backend (device_type() == MPS, name() == "metal"), created on
// first use and never destroyed.
Backend& metal_backend();

// The argument table entries a kernel declares: bit N of buffers is
// [[buffer(N)]], of threadgroups [[threadgroup(N)]]. Dispatch requires each
// to be set (declared_slots.h).
struct KernelSlots {
  uint32_t buffers = 0;
  uint32_t threadgroups = 0;
};

// One MTLLibrary with its pipeline-state cache. Thread-safe. Kernel handles
// found through it stay valid as long as the library lives; they dispatch
// through metal_backend().dispatch on PyTorch's current MPS stream.
class MetalLibrary {
 public:
  // A metallib image in memory; the bytes are copied, the caller keeps its
  // buffer. Raises c10::Error with Metal's message if the image does not load.
  static std::shared_ptr<MetalLibrary> from_metallib(const void* bytes, size_t size,
                                                     const std::string& label);
  // MSL source compiled now at language version 3.1 with fast math off. The
  // source cannot #include anything but Metal's own headers (inline ours
  // first). Raises c10::Error carrying the compiler's message on failure.
  static std::shared_ptr<MetalLibrary> from_source(const std::string& source,
                                                   const std::string& label);

  ~MetalLibrary();
  MetalLibrary(const MetalLibrary&) = delete;
  MetalLibrary& operator=(const MetalLibrary&) = delete;

  // nullptr when the library has no function of that name; the pipeline state
  // is built on the first lookup of a name and cached. The kernel's declared
  // slots come from the pipeline's reflection (libraries loaded at run time)...
  KernelHandle* find_kernel(const std::string& name);
  // ...or, for the built-in kernels, from the table the build recorded.
  KernelHandle* find_kernel(const std::string& name, KernelSlots declared);
  std::vector<std::string> function_names() const;
  const std::string& label() const;

  struct Impl;  // Objective-C++ state, defined in metal_library.mm

 private:
  explicit MetalLibrary(std::unique_ptr<Impl> impl);
  // declared: the built-in kernel's recorded slots, or nullptr to reflect.
  KernelHandle* lookup(const std::string& name, const KernelSlots* declared);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mps_ops
