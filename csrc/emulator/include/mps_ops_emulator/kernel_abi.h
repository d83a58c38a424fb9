// The boundary between generated kernel translation units and the emulator
// core. Kernel TUs see only this and the metal_stdlib stand-in (no torch, no
// C++ standard library); the core (emulator/backend.cpp) owns the table.
#pragma once

#include <stdint.h>

namespace mps_ops_emu {

struct grid3 {
  uint32_t x, y, z;
};

// Buffers as Metal binds them: index N of [[buffer(N)]] -> address, or
// nullptr where nothing is bound.
constexpr int max_buffers = 31;

struct dispatch_args {
  void* buffers[max_buffers];
  grid3 threads;  // dispatchThreads: the whole grid
  grid3 group;    // threads per threadgroup
};

using launch_fn = void (*)(const dispatch_args&);

struct kernel_entry {
  const char* host_name;
  const char* source_file;
  launch_fn launch;
  uint32_t buffer_mask;  // bit N set: the kernel declares [[buffer(N)]]
};

// Defined by the emulator core; called by each kernel TU's static registrars.
void register_kernel(const kernel_entry& entry);

struct registrar {
  explicit registrar(const kernel_entry& entry) { register_kernel(entry); }
};

}  // namespace mps_ops_emu
