// Threads of a threadgroup that synchronise run as fibers on one OS thread.
// A fiber runs until it reaches a barrier or a SIMD-group collective, then
// yields to the group's scheduler. When every live fiber is blocked, the
// scheduler first completes SIMD collectives (per simdgroup, one collective
// per call site: lanes that branched apart form separate collectives, as on
// the GPU), then, when every live fiber waits at a threadgroup barrier,
// releases the barrier. A thread that returns while others wait at a
// barrier, or barriers reached a different number of times, is an error.
#pragma once

#include "fiber_switch.h"
#include "kernel_abi.h"
#include "launch_types.h"

namespace mps_ops_emu {

using ::mps_ops_msl::simd_width;

struct fiber;
// Completes one collective for the lanes (in lane order) that met at it.
using resolve_fn = void (*)(fiber** lanes, uint32_t count);

struct fiber {
  void* sp;
  thread_place place;
  uint32_t lane;
  uint32_t simdgroup;
  enum state_t : uint8_t { ready, at_barrier, at_collective, done } state;
  uint64_t site;  // call site (line << 32 | column) of the barrier or collective it waits at
  resolve_fn resolve;
  uint32_t argument;  // lane index, delta or mask of a shuffle
  alignas(16) unsigned char value[64];
  alignas(16) unsigned char fill[64];
  alignas(16) unsigned char result[64];
};

struct group_run {
  fiber* fibers;
  uint32_t count;
  fiber* current;
  void* scheduler_sp;
  const dispatch_args* args;
  void (*body)(const dispatch_args&, const thread_place&);
};

inline group_run*& current_group() {
  static thread_local group_run* run = nullptr;
  return run;
}

inline fiber& current_fiber() { return *current_group()->current; }

inline void yield_to_scheduler() {
  group_run* run = current_group();
  mps_ops_emu_switch(&run->current->sp, run->scheduler_sp);
}

inline void fiber_entry(void* raw) {
  fiber* self = static_cast<fiber*>(raw);
  group_run* run = current_group();
  run->body(*run->args, self->place);
  self->state = fiber::done;
  mps_ops_emu_switch(&self->sp, run->scheduler_sp);
}

inline void copy_bytes(void* to, const void* from, uint32_t n) {
  unsigned char* t = static_cast<unsigned char*>(to);
  const unsigned char* f = static_cast<const unsigned char*>(from);
  for (uint32_t i = 0; i < n; ++i) t[i] = f[i];
}

inline void set_error(const dispatch_args& args, const char* message) {
  char* e = const_cast<char*>(args.error);
  if (e[0]) return;
  uint32_t i = 0;
  for (; message[i] && i + 1 < sizeof(args.error); ++i) e[i] = message[i];
  e[i] = 0;
}

// Runs the threads of one threadgroup to completion. Returns false after
// recording an error in args.error.
inline bool run_group_fibers(const dispatch_args& args, const thread_place& group_place,
                             void (*body)(const dispatch_args&, const thread_place&)) {
  const grid3 size = group_place.group_size;
  const uint32_t count = size.x * size.y * size.z;
  if (count > args.fiber_count) {
    set_error(args, "threadgroup larger than the fiber stacks the host prepared");
    return false;
  }
  fiber* fibers = reinterpret_cast<fiber*>(args.fiber_records);
  group_run run{fibers, count, nullptr, nullptr, &args, body};
  // Set, not saved and restored: a fault in a fiber jumps out past the end
  // of this function, and nothing may keep pointing at this frame.
  current_group() = &run;
  for (uint32_t i = 0; i < count; ++i) {
    fiber& f = fibers[i];
    f.place = group_place;
    f.place.in_group = grid3{i % size.x, (i / size.x) % size.y, i / (size.x * size.y)};
    f.place.in_grid = grid3{group_place.in_grid.x + f.place.in_group.x,
                            group_place.in_grid.y + f.place.in_group.y,
                            group_place.in_grid.z + f.place.in_group.z};
    f.place.index_in_group = i;
    f.lane = i % simd_width;
    f.simdgroup = i / simd_width;
    f.state = fiber::ready;
    f.sp = fiber_stack_init(args.fiber_stacks + uint64_t(i) * args.fiber_stack_stride,
                            args.fiber_stack_size, &fiber_entry, &f);
  }
  bool ok = true;
  fiber* waiting[simd_width];
  for (;;) {
    uint32_t live = 0;
    for (uint32_t i = 0; i < count; ++i) {
      if (fibers[i].state == fiber::ready) {
        run.current = &fibers[i];
        mps_ops_emu_switch(&run.scheduler_sp, fibers[i].sp);
      }
    }
    for (uint32_t i = 0; i < count; ++i) live += fibers[i].state != fiber::done;
    if (live == 0) break;
    // SIMD collectives: every live fiber is blocked now, so the lanes waiting
    // at one call site of one simdgroup are exactly that collective's lanes.
    bool resolved = false;
    for (uint32_t first = 0; first < count; first += simd_width) {
      const uint32_t end = first + simd_width < count ? first + simd_width : count;
      for (uint32_t i = first; i < end; ++i) {
        if (fibers[i].state != fiber::at_collective) continue;
        const uint64_t site = fibers[i].site;
        const resolve_fn resolve = fibers[i].resolve;
        uint32_t n = 0;
        for (uint32_t j = i; j < end; ++j) {
          if (fibers[j].state == fiber::at_collective && fibers[j].site == site &&
              fibers[j].resolve == resolve) {
            waiting[n++] = &fibers[j];
          }
        }
        waiting[0]->resolve(waiting, n);
        for (uint32_t k = 0; k < n; ++k) waiting[k]->state = fiber::ready;
        resolved = true;
      }
    }
    if (resolved) continue;
    // Only threadgroup barriers remain. Unequal barrier counts surface here
    // as a thread that returned while others wait; barriers in divergent
    // control flow as threads waiting at different call sites.
    uint64_t barrier_site = ~uint64_t(0);
    for (uint32_t i = 0; i < count; ++i) {
      fiber& f = fibers[i];
      if (f.state == fiber::done) {
        set_error(args, "a thread returned while other threads of its threadgroup wait at a "
                        "threadgroup_barrier (undefined behaviour on the GPU)");
        ok = false;
        break;
      }
      if (barrier_site == ~uint64_t(0)) barrier_site = f.site;
      if (f.site != barrier_site) {
        set_error(args, "threads of one threadgroup wait at different threadgroup_barrier call "
                        "sites (a barrier in divergent control flow: undefined behaviour on the GPU)");
        ok = false;
        break;
      }
    }
    if (!ok) break;
    for (uint32_t i = 0; i < count; ++i) {
      fibers[i].state = fiber::ready;
    }
  }
  current_group() = nullptr;
  return ok;
}

}  // namespace mps_ops_emu
