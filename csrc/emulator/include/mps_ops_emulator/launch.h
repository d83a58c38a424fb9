// Launchers the prepass instantiates for each [[host_name]] kernel. The
// prepass only names each parameter's role (from its MSL attribute); the
// parameter types come from the kernel's own signature through decltype, so
// no kernel signature is written twice.
#pragma once

#include <mps_ops_msl/builtin_roles.h>
#include <mps_ops_msl/kernel_signature.h>

#include "kernel_abi.h"
#include "launch_types.h"
#include "metal_simd.h"
#include "bounded_ptr.h"
#include "threadgroup_memory.h"

namespace mps_ops_emu {

using ::mps_ops_msl::kernel_signature;

// [[buffer(N)]]: a pointer parameter gets the address, bounded by the bytes
// bound there; a reference parameter (`constant T& x [[buffer(N)]]`, set
// with setBytes) gets the object there, when enough bytes are bound for it.
template <class P>
struct buffer_binding {
  static P bind(const dispatch_args& args, int n) { return reinterpret_cast<P>(args.buffers[n]); }
};
template <class T>
struct buffer_binding<bounded_ptr<T>> {
  static bounded_ptr<T> bind(const dispatch_args& args, int n) {
    return bounded_ptr<T>(static_cast<T*>(args.buffers[n]), active_ranges().buffer_range[n]);
  }
};
template <class T>
struct buffer_binding<T&> {
  static T& bind(const dispatch_args& args, int n) {
    if (args.buffer_lengths[n] < sizeof(T)) {
      out_of_bounds(*active_ranges().buffer_range[n], uintptr_t(args.buffers[n]), sizeof(T));
    }
    return *reinterpret_cast<T*>(args.buffers[n]);
  }
};

template <int N>
struct buffer_role {
  template <class P>
  static P get(const dispatch_args& args, const thread_place&) {
    return buffer_binding<P>::bind(args, N);
  }
};

// Built-ins: the shared roles (mps_ops_msl/builtin_roles.h).
MPS_OPS_MSL_BUILTIN_ROLES(MPS_OPS_MSL_USE_ROLE)

// [[threadgroup(N)]]: the group's slice of the arena the core sized from
// setThreadgroupMemoryLength (threadgroup_slices); a pointer is bounded by
// its own argument's bytes, so running into the next argument is caught.
template <class P>
struct threadgroup_binding {
  static P bind(int n) {
    const memory_range* range = active_ranges().threadgroup_range[n];
    return range ? reinterpret_cast<P>(range->begin) : nullptr;
  }
};
template <class T>
struct threadgroup_binding<bounded_ptr<T>> {
  static bounded_ptr<T> bind(int n) {
    const memory_range* range = active_ranges().threadgroup_range[n];
    return range ? bounded_ptr<T>(reinterpret_cast<T*>(range->begin), range) : bounded_ptr<T>();
  }
};

template <int N>
struct threadgroup_role {
  template <class P>
  static P get(const dispatch_args&, const thread_place&) {
    return threadgroup_binding<P>::bind(N);
  }
};

// The ranges every bounded pointer of this dispatch derives from: bound
// buffers, then the threadgroup arguments' slices of the arena (in index
// order, 16-aligned). Declared threadgroup arrays add theirs when placed.
inline void begin_dispatch_ranges(const dispatch_args& args) {
  range_table& t = active_ranges();
  t.args = &args;
  t.count = 0;
  for (int i = 0; i < max_buffers; ++i) {
    t.buffer_range[i] = args.buffers[i] ? add_range(uintptr_t(args.buffers[i]), args.buffer_lengths[i],
                                                    buffer_memory, i, nullptr)
                                        : nullptr;
  }
  uint64_t offset = 0;
  for (int i = 0; i < max_buffers; ++i) {
    const uint64_t length = args.threadgroup_lengths[i];
    t.threadgroup_range[i] = length ? add_range(uintptr_t(args.threadgroup_arena + offset), length,
                                                threadgroup_argument_memory, i, nullptr)
                                    : nullptr;
    offset += (length + 15) & ~uint64_t(15);
  }
}

// Without the a + b - 1 form, which wraps for grids near 2**32.
inline uint32_t ceil_div(uint32_t a, uint32_t b) { return a / b + (a % b != 0); }
inline uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }


// Threadgroups one after another (last to first with reverse_group_order),
// edge groups clipped to the grid; a fresh, poisoned threadgroup memory for
// each. `run_group` runs the threads of one group.
template <class RunGroup>
void for_each_group(const dispatch_args& args, RunGroup run_group) {
  thread_place t;
  t.grid_size = args.threads;
  t.groups = grid3{ceil_div(args.threads.x, args.group.x), ceil_div(args.threads.y, args.group.y),
                   ceil_div(args.threads.z, args.group.z)};
  const uint64_t n_groups = uint64_t(t.groups.x) * t.groups.y * t.groups.z;
  const bool reverse = args.flags & reverse_group_order;
  for (uint64_t k = 0; k < n_groups; ++k) {
    if (args.stop != nullptr && *args.stop != 0) return;
    const uint64_t g = reverse ? n_groups - 1 - k : k;
    const uint32_t gx = uint32_t(g % t.groups.x);
    const uint32_t gy = uint32_t((g / t.groups.x) % t.groups.y);
    const uint32_t gz = uint32_t(g / (uint64_t(t.groups.x) * t.groups.y));
    t.group_in_grid = grid3{gx, gy, gz};
    t.in_grid = grid3{gx * args.group.x, gy * args.group.y, gz * args.group.z};  // the origin
    t.group_size = grid3{min_u32(args.group.x, args.threads.x - t.in_grid.x),
                         min_u32(args.group.y, args.threads.y - t.in_grid.y),
                         min_u32(args.group.z, args.threads.z - t.in_grid.z)};
    begin_threadgroup(args);
    if (!run_group(t) || args.error[0]) return;
  }
}

// Barrier-free kernels: a plain loop with the kernel inlined.
template <class Fn, Fn Kernel, class... Roles>
void launch(const dispatch_args& args) {
  static_assert(kernel_signature<Fn>::arity == sizeof...(Roles),
                "every kernel parameter needs exactly one role");
  using invoke = ::mps_ops_msl::invoke_kernel<dispatch_args, Fn, Kernel, Roles...>;
  plain_loop_args() = &args;
  current_group() = nullptr;  // whatever an earlier, faulted dispatch left
  begin_dispatch_ranges(args);
  for_each_group(args, [&](thread_place t) {
    const grid3 origin = t.in_grid;
    uint32_t index = 0;
    for (uint32_t tz = 0; tz < t.group_size.z; ++tz) {
      for (uint32_t ty = 0; ty < t.group_size.y; ++ty) {
        for (uint32_t tx = 0; tx < t.group_size.x; ++tx) {
          t.in_group = grid3{tx, ty, tz};
          t.in_grid = grid3{origin.x + tx, origin.y + ty, origin.z + tz};
          t.index_in_group = index++;
          invoke::call(args, t);
        }
      }
    }
    return true;
  });
  plain_loop_args() = nullptr;
}

// Kernels with barriers or SIMD-group functions: each thread of a group is a
// fiber (fibers.h).
template <class Fn, Fn Kernel, class... Roles>
void launch_collective(const dispatch_args& args) {
  static_assert(kernel_signature<Fn>::arity == sizeof...(Roles),
                "every kernel parameter needs exactly one role");
  static_assert(sizeof(fiber) <= fiber_record_bytes, "fiber record larger than the host reserves");
  using invoke = ::mps_ops_msl::invoke_kernel<dispatch_args, Fn, Kernel, Roles...>;
  plain_loop_args() = nullptr;
  begin_dispatch_ranges(args);
  for_each_group(args, [&](const thread_place& t) {
    return run_group_fibers(args, t, &invoke::call);
  });
}

}  // namespace mps_ops_emu
