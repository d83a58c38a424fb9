// The roles of Metal's built-in kernel parameters ([[thread_position_in_grid]]
// and the rest), the same for every C++ target: a role turns a thread's place
// into the parameter's value, in the scalar, 2- or 3-vector form the kernel
// declares. Each target's launcher calls `get<P>(args, place)` with its own
// dispatch arguments, which built-ins do not read. The prepass names the roles
// in the target's namespace, which takes them in with MPS_OPS_MSL_BUILTIN_ROLES.
#pragma once

#include "thread_place.h"
#include "vector.h"

namespace mps_ops_msl {

// Built-ins come in scalar, 2- and 3-vector forms of uint or ushort.
template <class P>
struct builtin_value {
  static P from(grid3 v) { return P(v.x); }
};
template <class T>
struct builtin_value<::mps_ops_emu::vec<T, 2>> {
  static ::mps_ops_emu::vec<T, 2> from(grid3 v) { return ::mps_ops_emu::vec<T, 2>(T(v.x), T(v.y)); }
};
template <class T>
struct builtin_value<::mps_ops_emu::vec<T, 3>> {
  static ::mps_ops_emu::vec<T, 3> from(grid3 v) {
    return ::mps_ops_emu::vec<T, 3>(T(v.x), T(v.y), T(v.z));
  }
};

// X(name, the grid3 it reads from thread_place t), for every built-in.
#define MPS_OPS_MSL_BUILTIN_ROLES(X)                                                       \
  X(thread_position_in_grid, t.in_grid)                                                   \
  X(thread_position_in_threadgroup, t.in_group)                                           \
  X(threadgroup_position_in_grid, t.group_in_grid)                                        \
  X(threads_per_grid, t.grid_size)                                                        \
  X(threads_per_threadgroup, t.group_size)                                                \
  X(threadgroups_per_grid, t.groups)                                                      \
  X(thread_index_in_threadgroup, (grid3{t.index_in_group, 0, 0}))                         \
  X(thread_index_in_simdgroup, (grid3{t.index_in_group % simd_width, 0, 0}))              \
  X(simdgroup_index_in_threadgroup, (grid3{t.index_in_group / simd_width, 0, 0}))         \
  X(simdgroups_per_threadgroup,                                                           \
    (grid3{(t.group_size.x * t.group_size.y * t.group_size.z + simd_width - 1) / simd_width, 0, 0})) \
  X(threads_per_simdgroup, (grid3{simd_width, 0, 0}))                                     \
  X(thread_execution_width, (grid3{simd_width, 0, 0}))

#define MPS_OPS_MSL_DEFINE_ROLE(NAME, EXPR)                        \
  struct NAME##_role {                                             \
    template <class P, class Args>                                 \
    static P get(const Args&, const thread_place& t) {             \
      return builtin_value<P>::from(EXPR);                         \
    }                                                              \
  };
MPS_OPS_MSL_BUILTIN_ROLES(MPS_OPS_MSL_DEFINE_ROLE)
#undef MPS_OPS_MSL_DEFINE_ROLE

}  // namespace mps_ops_msl

// In a target's namespace: its names for the shared roles.
#define MPS_OPS_MSL_USE_ROLE(NAME, EXPR) using ::mps_ops_msl::NAME##_role;
