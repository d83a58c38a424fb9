// The Metal side of the backend interface (macOS). C++ only: no Objective-C
// type appears here, so host code and bindings include it as plain C++; the
// implementation is metal_backend.mm, the project's only Objective-C++.
//
// Kernels built into the extension come from symbols that the build defines
// in one generated C++ file (tools/macos_build.py writes it). All five are
// always defined; exactly one of the two forms is non-empty:
//
//   extern "C" const unsigned char mps_ops_metallib[];        // metallib image
//   extern "C" const size_t mps_ops_metallib_size;            // 0: no metallib
//   extern "C" const char* const mps_ops_kernel_sources[];    // MSL, headers inlined,
//   extern "C" const char* const mps_ops_kernel_source_names[];  // one per .metal
//   extern "C" const size_t mps_ops_kernel_source_count;      // 0: no sources
//
// With a metallib (the Metal toolchain was there at build time) the library
// is loaded from memory with newLibraryWithData. Without one, each embedded
// source is compiled at first use with newLibraryWithSource (MSL 3.1, fast
// math off), one library per .metal file, as the offline build compiles one
// .air per file. Host names are the same either way.
#pragma once

#include "../backend.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace mps_ops {

// The Metal backend (device_type() == MPS, name() == "metal"), created on
// first use and never destroyed.
Backend& metal_backend();

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
  // is built on the first lookup of a name and cached.
  KernelHandle* find_kernel(const std::string& name);
  std::vector<std::string> function_names() const;
  const std::string& label() const;

  struct Impl;  // Objective-C++ state, defined in metal_backend.mm

 private:
  explicit MetalLibrary(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mps_ops
