// What the build embeds in the extension for the Metal backend: the one
// declaration of the symbols that tools/macos_build.py defines in its
// generated C++ file (which includes this header, so the compiler holds both
// sides to it) and builtin_libraries.cpp reads. Plain C++.
//
// Always all of them: the sources and the kernel table are embedded whether
// or not the build had a Metal toolchain, so that MPS_OPS_METAL_FROM_SOURCE=1
// can get past a metallib that does not load or run.
#pragma once

#include <stddef.h>
#include <stdint.h>

extern "C" {

// One built-in kernel, as the build found it in csrc/kernels/*.metal (the
// emulator prepass's scan of the preprocessed source).
struct mps_ops_embedded_kernel {
  const char* host_name;
  // The file that defines it: an index into mps_ops_kernel_sources/_names.
  uint32_t source;
  // Bit N: the kernel declares [[buffer(N)]] / [[threadgroup(N)]]. Each must
  // be set at every dispatch (the shared encoder keeps the previous kernel's).
  uint32_t buffer_slots;
  uint32_t threadgroup_slots;
};

// The metallib image of every .metal file; size 0 when the build had no
// Metal toolchain.
extern const unsigned char mps_ops_metallib[];
extern const size_t mps_ops_metallib_size;

// One MSL text per .metal file, our headers inlined (a library compiled at run
// time sees no include path), and its path (csrc/kernels/<file>.metal).
extern const char* const mps_ops_kernel_sources[];
extern const char* const mps_ops_kernel_source_names[];
extern const size_t mps_ops_kernel_source_count;

// Every built-in kernel, sorted by host name.
extern const struct mps_ops_embedded_kernel mps_ops_embedded_kernels[];
extern const size_t mps_ops_embedded_kernel_count;
}
