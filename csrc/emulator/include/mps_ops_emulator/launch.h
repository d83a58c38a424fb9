// Launchers the prepass instantiates for each [[host_name]] kernel. The
// prepass only names each parameter's role (from its MSL attribute); the
// parameter types come from the kernel's own signature through decltype, so
// no kernel signature is written twice.
#pragma once

#include "kernel_abi.h"

namespace mps_ops_emu {

template <class... Ts>
struct type_list {};

template <unsigned I, class... Ts>
struct nth_type;
template <class T, class... Ts>
struct nth_type<0, T, Ts...> {
  using type = T;
};
template <unsigned I, class T, class... Ts>
struct nth_type<I, T, Ts...> : nth_type<I - 1, Ts...> {};

template <class Fn>
struct kernel_signature;
template <class... Params>
struct kernel_signature<void (*)(Params...)> {
  static constexpr unsigned arity = sizeof...(Params);
  template <unsigned I>
  using param = typename nth_type<I, Params...>::type;
};

// Where one thread stands, as the built-in attributes describe it.
struct thread_place {
  grid3 in_grid;
  grid3 in_group;
  grid3 group_in_grid;
  grid3 grid_size;
  grid3 group_size;  // of this (possibly clipped) threadgroup
  grid3 groups;
};

template <class T>
struct remove_ref {
  using type = T;
};
template <class T>
struct remove_ref<T&> {
  using type = T;
};

// [[buffer(N)]]: a pointer parameter gets the address; a reference parameter
// (`constant T& x [[buffer(N)]]`, set with setBytes) gets the object there.
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
  static P get(const dispatch_args& args, const thread_place&) {
    return buffer_binding<P>::bind(args.buffers[N]);
  }
};

// Built-ins come in scalar, 2- and 3-vector forms of uint or ushort.
template <class P>
struct builtin_value {
  static P from(grid3 v) { return P(v.x); }
};
template <class T>
struct builtin_value<vec<T, 2>> {
  static vec<T, 2> from(grid3 v) { return vec<T, 2>(T(v.x), T(v.y)); }
};
template <class T>
struct builtin_value<vec<T, 3>> {
  static vec<T, 3> from(grid3 v) { return vec<T, 3>(T(v.x), T(v.y), T(v.z)); }
};

#define MPS_OPS_EMU_BUILTIN_ROLE(NAME, EXPR)                               \
  struct NAME##_role {                                                     \
    template <class P>                                                     \
    static P get(const dispatch_args&, const thread_place& t) {            \
      return builtin_value<P>::from(EXPR);                                 \
    }                                                                      \
  };
MPS_OPS_EMU_BUILTIN_ROLE(thread_position_in_grid, t.in_grid)
MPS_OPS_EMU_BUILTIN_ROLE(thread_position_in_threadgroup, t.in_group)
MPS_OPS_EMU_BUILTIN_ROLE(threadgroup_position_in_grid, t.group_in_grid)
MPS_OPS_EMU_BUILTIN_ROLE(threads_per_grid, t.grid_size)
MPS_OPS_EMU_BUILTIN_ROLE(threads_per_threadgroup, t.group_size)
MPS_OPS_EMU_BUILTIN_ROLE(threadgroups_per_grid, t.groups)
MPS_OPS_EMU_BUILTIN_ROLE(
    thread_index_in_threadgroup,
    (grid3{t.in_group.x + t.group_size.x * (t.in_group.y + t.group_size.y * t.in_group.z), 0, 0}))
#undef MPS_OPS_EMU_BUILTIN_ROLE

inline uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
inline uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }

template <class Fn, Fn Kernel, class... Roles>
struct launcher {
  template <unsigned... I>
  struct with_indices {
    static void call(const dispatch_args& args, const thread_place& t) {
      using sig = kernel_signature<Fn>;
      Kernel(Roles::template get<typename sig::template param<I>>(args, t)...);
    }
  };
};

template <unsigned N, unsigned... I>
struct make_indices : make_indices<N - 1, N - 1, I...> {};
template <unsigned... I>
struct make_indices<0, I...> {
  template <class Fn, Fn Kernel, class... Roles>
  using call = typename launcher<Fn, Kernel, Roles...>::template with_indices<I...>;
};

// dispatchThreads semantics, barrier-free kernels: threadgroups one after
// another, threads of a group in x-fastest order, edge groups clipped to the
// grid. Kernels with barriers need fibers (the emulator issue); the prepass
// refuses them until then.
template <class Fn, Fn Kernel, class... Roles>
void launch(const dispatch_args& args) {
  static_assert(kernel_signature<Fn>::arity == sizeof...(Roles),
                "every kernel parameter needs exactly one role");
  using invoke = typename make_indices<sizeof...(Roles)>::template call<Fn, Kernel, Roles...>;
  thread_place t;
  t.grid_size = args.threads;
  t.groups = grid3{ceil_div(args.threads.x, args.group.x), ceil_div(args.threads.y, args.group.y),
                   ceil_div(args.threads.z, args.group.z)};
  for (uint32_t gz = 0; gz < t.groups.z; ++gz) {
    for (uint32_t gy = 0; gy < t.groups.y; ++gy) {
      for (uint32_t gx = 0; gx < t.groups.x; ++gx) {
        t.group_in_grid = grid3{gx, gy, gz};
        const grid3 origin{gx * args.group.x, gy * args.group.y, gz * args.group.z};
        t.group_size = grid3{min_u32(args.group.x, args.threads.x - origin.x),
                             min_u32(args.group.y, args.threads.y - origin.y),
                             min_u32(args.group.z, args.threads.z - origin.z)};
        for (uint32_t tz = 0; tz < t.group_size.z; ++tz) {
          for (uint32_t ty = 0; ty < t.group_size.y; ++ty) {
            for (uint32_t tx = 0; tx < t.group_size.x; ++tx) {
              t.in_group = grid3{tx, ty, tz};
              t.in_grid = grid3{origin.x + tx, origin.y + ty, origin.z + tz};
              invoke::call(args, t);
            }
          }
        }
      }
    }
  }
}

}  // namespace mps_ops_emu
