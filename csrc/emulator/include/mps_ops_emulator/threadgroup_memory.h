// Threadgroup memory: `threadgroup T x[N];` declared in a kernel body (the
// prepass rewrites it to threadgroup_variable<T[N], ID>()) and
// [[threadgroup(N)]] parameters (launch.h). Threadgroups run one after
// another, so one storage per declaration serves every group; it is poisoned
// (all bytes 0xff: NaN floats, -1 integers) when a new group first touches
// it, so reading before writing shows.
#pragma once

#include "kernel_abi.h"

namespace mps_ops_emu {

inline uint64_t& threadgroup_epoch() {
  static thread_local uint64_t epoch = 0;
  return epoch;
}

inline void poison_bytes(unsigned char* p, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) p[i] = 0xff;
}

inline void begin_threadgroup(const dispatch_args& args) {
  ++threadgroup_epoch();
  if (args.threadgroup_arena) poison_bytes(args.threadgroup_arena, args.threadgroup_arena_size);
}

template <class T, int Id>
T& threadgroup_variable() {
  alignas(16) static thread_local unsigned char storage[sizeof(T)];
  static thread_local uint64_t seen = 0;
  if (seen != threadgroup_epoch()) {
    seen = threadgroup_epoch();
    poison_bytes(storage, sizeof(T));
  }
  return *reinterpret_cast<T*>(storage);
}

}  // namespace mps_ops_emu
