// The boundary between generated kernel translation units and the emulator
// core. Kernel TUs see only this and the metal_stdlib stand-in (no torch, no
// C++ standard library); the core (emulator/backend.cpp) owns the table.
#pragma once

#include <stdint.h>

#include <mps_ops_msl/thread_place.h>

namespace mps_ops_emu {

using ::mps_ops_msl::grid3;

// Buffers as Metal binds them: index N of [[buffer(N)]] -> address, or
// nullptr where nothing is bound.
constexpr int max_buffers = 31;

// What a bounds-checked pointer (bounded_ptr.h) points into.
enum memory_kind : int32_t { buffer_memory, threadgroup_argument_memory, threadgroup_array_memory };

struct memory_range {
  uintptr_t begin;
  uint64_t bytes;
  memory_kind kind;
  int32_t index;     // [[buffer(N)]] or [[threadgroup(N)]]
  const char* name;  // a declared threadgroup array's name
};

// An access outside its range: `bytes` bytes at byte `offset` from its start.
struct access_fault {
  const memory_range* range;
  int64_t offset;
  uint64_t bytes;
};

struct dispatch_args;
// The core's: records the fault and jumps back to the dispatch (never returns).
using fail_fn = void (*)(void* context, const access_fault& fault);

struct dispatch_args {
  void* buffers[max_buffers];
  uint64_t buffer_lengths[max_buffers];  // bytes bound at each buffer
  // [[threadgroup(N)]] parameters: bytes per threadgroup (setThreadgroupMemoryLength).
  uint32_t threadgroup_lengths[max_buffers];
  grid3 threads;  // dispatchThreads: the whole grid
  grid3 group;    // threads per threadgroup
  // Prepared by the core for collective kernels: one stack and one fiber
  // record per thread of a threadgroup.
  unsigned char* fiber_stacks;  // stack i: [fiber_stacks + i * stride, + size)
  uint64_t fiber_stack_size;
  uint64_t fiber_stack_stride;
  unsigned char* fiber_records;
  uint32_t fiber_count;
  // Threadgroup memory of the running group; poisoned at each group's start.
  unsigned char* threadgroup_arena;
  uint64_t threadgroup_arena_size;
  uint32_t flags;
  // Nonzero (Ctrl-C): return before the next threadgroup; the core raises.
  const volatile int* stop;
  // Distinct for every dispatch (storage placed for one is not reused by the next).
  uint64_t serial;
  // Checked mode: storage for a declared threadgroup array, ending at an
  // inaccessible page (the core's; nullptr when unchecked).
  unsigned char* (*threadgroup_storage)(void* context, uint64_t bytes);
  void* threadgroup_storage_context;
  fail_fn fail;
  void* fail_context;
  char error[256];  // set by the kernel side; the core raises it
};

// dispatch_args.flags
constexpr uint32_t reverse_group_order = 1u;  // run threadgroups last to first

// Bytes the core must provide per fiber record (static_assert'ed where the
// record type is defined).
constexpr uint64_t fiber_record_bytes = 512;

using launch_fn = void (*)(const dispatch_args&);

// One [[buffer(N)]] parameter as the kernel declares it (the prepass writes
// them), read by test/test_bindings.py to check that each host stub binds
// what the kernel expects.
struct buffer_param {
  uint32_t slot;   // N
  char kind;       // 'd' device pointer, 'c' constant pointer, 'v' constant reference (setBytes)
  uint32_t bytes;  // sizeof the referenced type, or of the pointee
};

struct kernel_entry {
  const char* host_name;
  const char* source_file;
  launch_fn launch;
  uint32_t buffer_mask;       // bit N set: the kernel declares [[buffer(N)]]
  uint32_t threadgroup_mask;  // bit N set: the kernel declares [[threadgroup(N)]]
  bool collective;            // uses barriers or SIMD-group functions: runs on fibers
  const buffer_param* buffer_params;  // in declaration order
  uint32_t buffer_param_count;
  uint64_t (*threadgroup_bytes)();  // declared threadgroup variables' bytes (threadgroup_memory.h)
  // The kernel's [[max_total_threads_per_threadgroup(N)]], else 0: Metal's
  // limit (its pipeline's maxTotalThreadsPerThreadgroup reports N).
  uint32_t max_threads;
};

#if defined(MPS_OPS_EMU_STANDALONE)
// A library built by compile_shader: its kernels stay in a table of its own,
// which the core reads through mps_ops_emu_library() after dlopen.
constexpr int max_library_kernels = 4096;
struct library_table {
  kernel_entry entries[max_library_kernels];
  int count;
};
inline library_table& local_library() {
  static library_table table;
  return table;
}
struct registrar {
  explicit registrar(const kernel_entry& entry) {
    library_table& t = local_library();
    if (t.count < max_library_kernels) t.entries[t.count++] = entry;
  }
};
#else
// Defined by the emulator core; called by each kernel TU's static registrars.
void register_kernel(const kernel_entry& entry);

struct registrar {
  explicit registrar(const kernel_entry& entry) { register_kernel(entry); }
};
#endif

}  // namespace mps_ops_emu

#if defined(MPS_OPS_EMU_STANDALONE)
extern "C" __attribute__((visibility("default"))) int mps_ops_emu_library(
    const mps_ops_emu::kernel_entry** entries) {
  *entries = mps_ops_emu::local_library().entries;
  return mps_ops_emu::local_library().count;
}
#endif
