// Threadgroup memory: `threadgroup T x[N];` declared in a kernel body (the
// prepass rewrites it to threadgroup_variable<T[N], ID>()) and
// [[threadgroup(N)]] parameters (launch.h). Threadgroups run one after
// another, so one storage per declaration serves every group; it is poisoned
// (all bytes 0xff: NaN floats, -1 integers) when a new group first touches
// it, so reading before writing shows.
#pragma once

#include "bounded_ptr.h"
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

// Declared sizes, known before a kernel runs: each instantiation of a
// declaration notes its size at load time (a static member's initializer), so
// the core can check Metal's 32 KiB limit (declared arrays plus
// [[threadgroup(N)]] arguments) before the first threadgroup. Tag is one type
// per translation unit (the prepass declares it), Id one per declaration; a
// declaration in a template counts at its largest instantiation.
template <class Tag, int Id>
struct declared_size {
  static uint64_t bytes;
};
template <class Tag, int Id>
uint64_t declared_size<Tag, Id>::bytes = 0;

inline bool note_size(uint64_t& largest, uint64_t bytes) {
  if (bytes > largest) largest = bytes;
  return true;
}

template <class T, int Id, class Tag>
struct declaration_note {
  static const bool noted;
};
template <class T, int Id, class Tag>
const bool declaration_note<T, Id, Tag>::noted = note_size(declared_size<Tag, Id>::bytes, sizeof(T));

// The kernel entry's `threadgroup_bytes`: the declarations a kernel reaches
// (the prepass follows its call graph), each 16-aligned.
template <class Tag, int... Ids>
uint64_t declared_threadgroup_bytes() {
  const uint64_t sizes[] = {0, declared_size<Tag, Ids>::bytes...};
  uint64_t total = 0;
  for (uint64_t size : sizes) total += (size + 15) & ~uint64_t(15);
  return total;
}

inline void begin_threadgroup(const dispatch_args& args) {
  ++threadgroup_epoch();
  if (args.threadgroup_arena) poison_bytes(args.threadgroup_arena, args.threadgroup_arena_size);
}

// In checked mode the storage lives where the core guards it (its end abuts
// an inaccessible page, as device buffers' do), placed once per dispatch.
// Either way it is registered as a range, so pointers into it are bounded.
template <class T, int Id>
T& threadgroup_storage(const char* name, const memory_range** range) {
  alignas(16) static thread_local unsigned char storage[sizeof(T)];
  static thread_local unsigned char* place = storage;
  static thread_local const memory_range* placed_range = nullptr;
  static thread_local uint64_t placed_for = 0;
  static thread_local uint64_t seen = 0;
  if (seen != threadgroup_epoch()) {
    seen = threadgroup_epoch();
    // The running dispatch (set by its launcher, bounded_ptr.h).
    const dispatch_args* args = active_ranges().args;
    if (args && args->serial != placed_for) {
      placed_for = args->serial;
      unsigned char* guarded = args->threadgroup_storage
                                   ? args->threadgroup_storage(args->threadgroup_storage_context, sizeof(T))
                                   : nullptr;
      place = guarded ? guarded : storage;
      placed_range = add_range(uintptr_t(place), sizeof(T), threadgroup_array_memory, Id, name);
    }
    poison_bytes(place, sizeof(T));
  }
  *range = placed_range;
  return *reinterpret_cast<T*>(place);
}

// `threadgroup T x;` -> a reference; `threadgroup T x[N]...;` -> a
// bounded_array whose every index is checked against the declaration.
template <class T, int Id>
struct threadgroup_declaration {
  static T& get(const char* name) {
    const memory_range* range;
    return threadgroup_storage<T, Id>(name, &range);
  }
};
template <class E, unsigned long N, int Id>
struct threadgroup_declaration<E[N], Id> {
  static bounded_array<E[N]> get(const char* name) {
    const memory_range* range;
    E (&array)[N] = threadgroup_storage<E[N], Id>(name, &range);
    return bounded_array<E[N]>(array, range);
  }
};

template <class T, int Id, class Tag>
decltype(auto) threadgroup_variable(const char* name) {
  (void)declaration_note<T, Id, Tag>::noted;
  return threadgroup_declaration<T, Id>::get(name);
}

}  // namespace mps_ops_emu
