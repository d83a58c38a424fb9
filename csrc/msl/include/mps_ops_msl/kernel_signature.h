// A kernel's parameter types, taken from the kernel itself through decltype,
// and the call of the kernel that binds each through its role: every C++
// target's launcher gets the types here and only the roles (MSL attributes)
// from the prepass, so no signature is written twice.
#pragma once

#include "thread_place.h"

namespace mps_ops_msl {

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

// One thread's call of the kernel: parameter I of the kernel gets
// Roles[I]::get<type of parameter I>(args, place), where Args is the target's
// dispatch arguments (the emulator's dispatch_args, the CUDA target's
// dispatch_params).
// A target's attributes for the call below (the CUDA target's: always
// inline, launch.h says why); none by default.
#ifndef MPS_OPS_MSL_KERNEL_CALL_ATTRIBUTES
#define MPS_OPS_MSL_KERNEL_CALL_ATTRIBUTES
#endif

template <class Args, class Fn, Fn Kernel, class... Roles>
struct kernel_call {
  template <unsigned... I>
  struct with_indices {
    MPS_OPS_MSL_KERNEL_CALL_ATTRIBUTES static void call(const Args& args, const thread_place& t) {
      using sig = kernel_signature<Fn>;
      Kernel(Roles::template get<typename sig::template param<I>>(args, t)...);
    }
  };
};

template <unsigned N, unsigned... I>
struct make_indices : make_indices<N - 1, N - 1, I...> {};
template <unsigned... I>
struct make_indices<0, I...> {
  template <class Args, class Fn, Fn Kernel, class... Roles>
  using call = typename kernel_call<Args, Fn, Kernel, Roles...>::template with_indices<I...>;
};

// kernel_call for every parameter of Fn, Roles in parameter order.
template <class Args, class Fn, Fn Kernel, class... Roles>
using invoke_kernel = typename make_indices<sizeof...(Roles)>::template call<Args, Fn, Kernel, Roles...>;

}  // namespace mps_ops_msl
