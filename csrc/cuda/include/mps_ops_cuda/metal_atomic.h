// MSL atomics on the GPU: clang's __atomic builtins, relaxed whatever order
// the source names (MSL itself offers memory_order_relaxed only for these).
// The types and their rules (which types, which operations) are shared with
// the emulator (mps_ops_msl/metal_atomic_types.h): what MSL forbids fails to
// compile here too.
#pragma once

#include <mps_ops_msl/metal_atomic_types.h>

namespace metal {

namespace atomic_detail {
// The object's address without `volatile`. MSL spells its atomics' objects
// volatile, but LLVM's address-space inference passes volatile accesses by:
// the atomic stayed on a generic address (ptxas: a generic ATOM with a
// shared-memory spin loop beside it) where the plain accesses beside it were
// global. An atomic is never elided or merged as a plain access can be, so
// volatile adds nothing to it.
template <class T>
T* address_of(const volatile atomic<T>* object) {
  return const_cast<T*>(&object->value);
}
}  // namespace atomic_detail

template <class T>
T atomic_load_explicit(const volatile atomic<T>* object, memory_order) {
  static_assert(!atomic_detail::is_64bit<T>, "MSL has no 64-bit atomic load");
  return __atomic_load_n(atomic_detail::address_of(object), __ATOMIC_RELAXED);
}

template <class T, class U>
void atomic_store_explicit(volatile atomic<T>* object, U desired, memory_order) {
  static_assert(!atomic_detail::is_64bit<T>, "MSL has no 64-bit atomic store");
  __atomic_store_n(atomic_detail::address_of(object), T(desired), __ATOMIC_RELAXED);
}

template <class T, class U>
T atomic_exchange_explicit(volatile atomic<T>* object, U desired, memory_order) {
  static_assert(!atomic_detail::is_64bit<T>, "MSL has no 64-bit atomic exchange");
  return __atomic_exchange_n(atomic_detail::address_of(object), T(desired), __ATOMIC_RELAXED);
}

template <class T, class U>
bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* object, thread T* expected, U desired,
                                           memory_order, memory_order) {
  static_assert(!atomic_detail::is_64bit<T>, "MSL has no 64-bit compare-exchange");
  return __atomic_compare_exchange_n(atomic_detail::address_of(object), expected, T(desired), true, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED);
}

#define MPS_OPS_CUDA_ATOMIC_FETCH(NAME, BUILTIN, ALLOWED, WHY)                   \
  template <class T, class U>                                                    \
  T atomic_fetch_##NAME##_explicit(volatile atomic<T>* object, U operand, memory_order) { \
    static_assert(ALLOWED, WHY);                                                 \
    return BUILTIN(atomic_detail::address_of(object), T(operand), __ATOMIC_RELAXED);                \
  }
MPS_OPS_CUDA_ATOMIC_FETCH(add, __atomic_fetch_add,
                          (atomic_detail::is_32bit_integer<T> || is_same_v<T, float>),
                          "atomic_fetch_add exists for int, uint and float only")
MPS_OPS_CUDA_ATOMIC_FETCH(sub, __atomic_fetch_sub,
                          (atomic_detail::is_32bit_integer<T> || is_same_v<T, float>),
                          "atomic_fetch_sub exists for int, uint and float only")
MPS_OPS_CUDA_ATOMIC_FETCH(and, __atomic_fetch_and, atomic_detail::is_32bit_integer<T>,
                          "atomic_fetch_and exists for int and uint only")
MPS_OPS_CUDA_ATOMIC_FETCH(or, __atomic_fetch_or, atomic_detail::is_32bit_integer<T>,
                          "atomic_fetch_or exists for int and uint only")
MPS_OPS_CUDA_ATOMIC_FETCH(xor, __atomic_fetch_xor, atomic_detail::is_32bit_integer<T>,
                          "atomic_fetch_xor exists for int and uint only")
MPS_OPS_CUDA_ATOMIC_FETCH(min, __atomic_fetch_min,
                          (atomic_detail::is_32bit_integer<T> || atomic_detail::is_64bit<T>),
                          "atomic_fetch_min exists for integers only (no float min/max)")
MPS_OPS_CUDA_ATOMIC_FETCH(max, __atomic_fetch_max,
                          (atomic_detail::is_32bit_integer<T> || atomic_detail::is_64bit<T>),
                          "atomic_fetch_max exists for integers only (no float min/max)")
#undef MPS_OPS_CUDA_ATOMIC_FETCH

}  // namespace metal
