// What each CUDA entry point runs: place the thread in Metal's grid (from
// threadIdx/blockIdx and the host's geometry, launch_abi.h), return if it lies
// past its clipped threadgroup, then call the kernel with every parameter
// taken from its role. As in the emulator's launch.h, the prepass names only
// the roles; parameter types come from the kernel through decltype.
#pragma once

#include "launch_abi.h"

// Every kernel inlined into its entry point. A kernel body the inliner finds
// too large (grid_sampler's bicubic backward) otherwise stays a function called
// with generic pointers, and its loads, stores and atomics lose the global
// address space LLVM infers from the entry's arguments (ptxas: generic atomics
// with a shared-memory spin loop beside each). Each kernel instantiation has
// one entry point, so this adds no code.
// Every level: run below, the call that binds the roles, and the kernel
// (MSL's `kernel`, empty in the shared stand-in).
#define MPS_OPS_MSL_KERNEL_CALL_ATTRIBUTES __attribute__((always_inline))

// The shared <metal_stdlib> stand-in, host+device like everything MSL here.
#pragma clang force_cuda_host_device begin
#include <mps_ops_msl/metal_stdlib.h>
#include <mps_ops_msl/builtin_roles.h>
#include <mps_ops_msl/kernel_signature.h>
#pragma clang force_cuda_host_device end
#undef kernel
#define kernel __attribute__((always_inline))

// The prepass writes `MPS_OPS_CUDA_ENTRY void <host name>(const
// ::mps_ops_cuda::dispatch_params args) { ... }` behind each instantiation,
// or MPS_OPS_CUDA_ENTRY_WITHIN(N) for a kernel that declares
// [[max_total_threads_per_threadgroup(N)]]: the compiler then keeps
// registers for groups of N (ptxas's occupancy target follows the bound; an
// Apple GPU's compiler reads the attribute alike).
#define MPS_OPS_CUDA_ENTRY_WITHIN(N) extern "C" __attribute__((__global__)) __attribute__((launch_bounds(N)))
#define MPS_OPS_CUDA_ENTRY MPS_OPS_CUDA_ENTRY_WITHIN(1024)

// [[threadgroup(N)]] arguments: one block of dynamic shared memory, sized by
// the host.
extern __attribute__((__shared__)) __attribute__((aligned(16))) unsigned char
    mps_ops_cuda_threadgroup_arguments[];

#pragma clang force_cuda_host_device begin

namespace mps_ops_cuda {

static_assert(max_threads_per_group == 1024, "MPS_OPS_CUDA_ENTRY's launch bounds");

// Where one thread stands (the same thread_place as the emulator's, filled
// from the hardware's indices).
using ::mps_ops_msl::thread_place;

inline uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }

// False for a thread past its clipped threadgroup: Metal never runs it. The
// linear index is laid out over the clipped sizes (x fastest), as the
// emulator numbers the threads of an edge group.
inline bool place_thread(const dispatch_params& args, thread_place& t) {
  const uint32_t launched = __nvvm_read_ptx_sreg_ctaid_x();
  const uint32_t block =
      args.reverse_group_order ? __nvvm_read_ptx_sreg_nctaid_x() - 1 - launched : launched;
  const uint32_t index = __nvvm_read_ptx_sreg_tid_x();
  t.grid_size = args.threads;
  t.groups = args.groups;
  // A row or column of threadgroups (most dispatches) needs no division:
  // these run for every thread, and a 32-bit division is a dozen
  // instructions, as much as a memory-bound kernel spends on an element.
  if (args.groups.y == 1 && args.groups.z == 1) {
    t.group_in_grid = grid3{block, 0, 0};
  } else if (args.groups.x == 1 && args.groups.z == 1) {
    t.group_in_grid = grid3{0, block, 0};
  } else {
    t.group_in_grid = grid3{block % args.groups.x, (block / args.groups.x) % args.groups.y,
                            block / args.groups.x / args.groups.y};
  }
  const grid3 origin{t.group_in_grid.x * args.group.x, t.group_in_grid.y * args.group.y,
                     t.group_in_grid.z * args.group.z};
  t.group_size = grid3{min_u32(args.group.x, args.threads.x - origin.x),
                       min_u32(args.group.y, args.threads.y - origin.y),
                       min_u32(args.group.z, args.threads.z - origin.z)};
  if (index >= t.group_size.x * t.group_size.y * t.group_size.z) return false;
  t.index_in_group = index;
  if (args.group.y == 1 && args.group.z == 1) {
    t.in_group = grid3{index, 0, 0};
  } else {
    t.in_group = grid3{index % t.group_size.x, (index / t.group_size.x) % t.group_size.y,
                       index / t.group_size.x / t.group_size.y};
  }
  t.in_grid = grid3{origin.x + t.in_group.x, origin.y + t.in_group.y, origin.z + t.in_group.z};
  return true;
}

using ::mps_ops_msl::kernel_signature;

// [[buffer(N)]]: a pointer parameter gets the address; a reference parameter
// (`constant T& x [[buffer(N)]]`) the object there. No bounds: on the GPU,
// compute-sanitizer's memcheck does what bounded_ptr does in the emulator.
template <class P>
struct buffer_binding {
  static P bind(void* address) { return reinterpret_cast<P>(address); }
};
template <class T>
struct buffer_binding<T&> {
  static T& bind(void* address) { return *reinterpret_cast<T*>(address); }
};

template <int N>
struct buffer_role {
  template <class P>
  static P get(const dispatch_params& args, const thread_place&) {
    return buffer_binding<P>::bind(args.buffers[N]);
  }
};

template <int N>
struct threadgroup_role {
  template <class P>
  static P get(const dispatch_params& args, const thread_place&) {
    return reinterpret_cast<P>(mps_ops_cuda_threadgroup_arguments + args.threadgroup_offsets[N]);
  }
};

// Built-ins: the shared roles (mps_ops_msl/builtin_roles.h).
MPS_OPS_MSL_BUILTIN_ROLES(MPS_OPS_MSL_USE_ROLE)


// The body of every entry point. A thread past its clipped group returns
// before the kernel, so it takes part in no barrier and no SIMD-group function
// (the functions work on the active mask).
template <class Fn, Fn Kernel, class... Roles>
__attribute__((always_inline)) inline void run(const dispatch_params& args) {
  static_assert(kernel_signature<Fn>::arity == sizeof...(Roles),
                "every kernel parameter needs exactly one role");
  using invoke = ::mps_ops_msl::invoke_kernel<dispatch_params, Fn, Kernel, Roles...>;
  thread_place t;
  if (!place_thread(args, t)) return;
  invoke::call(args, t);
}

}  // namespace mps_ops_cuda

#pragma clang force_cuda_host_device end
