// The libraries that hold the kernels built into the extension, made from
// what the build embedded (embedded_kernels.h) on first use.
//
// With a metallib, one library: the metallib, loaded at the first lookup.
// Without one, or when MPS_OPS_METAL_FROM_SOURCE=1 asks for it (to get past a
// metallib that does not load or misbehaves), one library per .metal file,
// compiled from its embedded source at the first lookup of one of its
// kernels: the build's kernel table says which file defines each host name.
// A file is compiled at most once; if Apple's compiler rejects it, its error
// is kept and raised for each of its kernels, and other files' kernels keep
// working. Compiling one file holds only that file's lock.
//
// Plain C++ over MetalLibrary's C++ face, so that this logic is tested on
// Linux against a stand-in MetalLibrary (test/test_builtin_libraries.py).
#pragma once

#include "metal_backend.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

struct mps_ops_embedded_kernel;

namespace mps_ops {

// The environment variable that forces the source fallback ("1").
inline constexpr char force_source_variable[] = "MPS_OPS_METAL_FROM_SOURCE";

// What the build embedded: embedded_kernels.h's symbols, or a test's.
struct EmbeddedKernels {
  const unsigned char* metallib = nullptr;
  size_t metallib_size = 0;  // 0: no metallib
  const char* const* sources = nullptr;
  const char* const* source_names = nullptr;
  size_t source_count = 0;
  const mps_ops_embedded_kernel* kernels = nullptr;
  size_t kernel_count = 0;
};

// Whether the environment asks for the source fallback (value "1").
bool force_source_requested();

class BuiltinLibraries {
 public:
  // force_source: compile the sources even where a metallib is embedded.
  BuiltinLibraries(const EmbeddedKernels& embedded, bool force_source);
  BuiltinLibraries(const BuiltinLibraries&) = delete;
  BuiltinLibraries& operator=(const BuiltinLibraries&) = delete;

  // The built-in kernel of that host name, with the slots the build recorded;
  // nullptr when no built-in kernel has that name. Raises c10::Error when the
  // library that holds it cannot be loaded or compiled. Thread-safe.
  KernelHandle* find_kernel(const std::string& host_name);

  bool compiles_sources() const {
    return compiles_sources_;
  }

 private:
  // A library made at most once: the library, or the error that made it fail.
  struct OnceLibrary {
    std::mutex mutex;
    bool tried = false;
    std::shared_ptr<MetalLibrary> library;
    std::string error;
  };

  MetalLibrary& library_of(const std::string& host_name, const mps_ops_embedded_kernel& kernel);
  // from_source: compile source number `source`; else load the metallib.
  MetalLibrary& make_once(OnceLibrary& once, const std::string& host_name, bool from_source,
                          size_t source);

  EmbeddedKernels embedded_;
  bool compiles_sources_;
  // Host name -> table entry. Filled by the constructor, read-only after.
  std::unordered_map<std::string, const mps_ops_embedded_kernel*> by_name_;
  OnceLibrary metallib_;
  std::vector<std::unique_ptr<OnceLibrary>> sources_;  // one per .metal file
};

}  // namespace mps_ops
