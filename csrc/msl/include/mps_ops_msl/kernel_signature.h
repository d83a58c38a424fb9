// A kernel's parameter types, taken from the kernel itself through decltype:
// every C++ target's launcher gets each parameter's type here and only its
// role (an MSL attribute) from the prepass, so no signature is written twice.
#pragma once

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

}  // namespace mps_ops_msl
