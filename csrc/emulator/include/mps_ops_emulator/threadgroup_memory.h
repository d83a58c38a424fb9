// Threadgroup memory: `threadgroup T x[N];` declared in a kernel body (the
// prepass rewrites it to threadgroup_variable<T[N], ID>()) and
// [[threadgroup(N)]] parameters (launch.h). Threadgroups run one after
// another, so one storage per declaration serves every group; it is poisoned
// (all bytes 0xff: NaN floats, -1 integers) when a new group first touches
// it, so reading before writing shows.
#pragma once

#include "fibers.h"
#include "kernel_abi.h"

namespace mps_ops_emu {

inline uint64_t& threadgroup_epoch() {
  static thread_local uint64_t epoch = 0;
  return epoch;
}

inline void poison_bytes(unsigned char* p, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) p[i] = 0xff;
}

// Metal's limit on a threadgroup's memory: declared arrays plus
// [[threadgroup(N)]] arguments.
constexpr uint64_t max_threadgroup_bytes = 32768;

struct threadgroup_usage {
  const dispatch_args* args;
  uint64_t static_bytes;  // declared arrays touched by this group so far
};

inline threadgroup_usage& current_threadgroup_usage() {
  static thread_local threadgroup_usage usage{nullptr, 0};
  return usage;
}

inline void begin_threadgroup(const dispatch_args& args) {
  ++threadgroup_epoch();
  current_threadgroup_usage() = threadgroup_usage{&args, 0};
  if (args.threadgroup_arena) poison_bytes(args.threadgroup_arena, args.threadgroup_arena_size);
}

// In checked mode the array lives in storage the core guards (its end abuts
// an inaccessible page, as device buffers' do), placed once per dispatch.
template <class T, int Id>
T& threadgroup_variable() {
  alignas(16) static thread_local unsigned char storage[sizeof(T)];
  static thread_local unsigned char* place = storage;
  static thread_local uint64_t placed_for = 0;
  static thread_local uint64_t seen = 0;
  if (seen != threadgroup_epoch()) {
    seen = threadgroup_epoch();
    threadgroup_usage& usage = current_threadgroup_usage();
    if (usage.args && usage.args->serial != placed_for) {
      placed_for = usage.args->serial;
      unsigned char* guarded = usage.args->threadgroup_storage
                                   ? usage.args->threadgroup_storage(usage.args->threadgroup_storage_context, sizeof(T))
                                   : nullptr;
      place = guarded ? guarded : storage;
    }
    poison_bytes(place, sizeof(T));
    usage.static_bytes += (sizeof(T) + 15) & ~uint64_t(15);
    if (usage.args && usage.static_bytes + usage.args->threadgroup_arena_size > max_threadgroup_bytes) {
      set_error(*usage.args, "threadgroup memory (declared arrays plus threadgroup arguments) exceeds "
                             "Metal's 32 KiB");
    }
  }
  return *reinterpret_cast<T*>(place);
}

}  // namespace mps_ops_emu
