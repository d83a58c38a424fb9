// MSL atomics. The emulator runs one threadgroup at a time on one OS thread
// (threads as a loop or as fibers that switch only at barriers and SIMD
// collectives), so every read-modify-write is already indivisible. The types and
// their rules are shared (mps_ops_msl/metal_atomic_types.h).
#pragma once

#include <mps_ops_msl/metal_atomic_types.h>

namespace metal {

template <class T>
T atomic_load_explicit(const volatile atomic<T>* object, memory_order) {
  static_assert(!atomic_detail::is_64bit<T>, "MSL has no 64-bit atomic load");
  return object->value;
}

template <class T, class U>
void atomic_store_explicit(volatile atomic<T>* object, U desired, memory_order) {
  static_assert(!atomic_detail::is_64bit<T>, "MSL has no 64-bit atomic store");
  object->value = T(desired);
}

template <class T, class U>
T atomic_exchange_explicit(volatile atomic<T>* object, U desired, memory_order) {
  static_assert(!atomic_detail::is_64bit<T>, "MSL has no 64-bit atomic exchange");
  T old = object->value;
  object->value = T(desired);
  return old;
}

template <class T, class U>
bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* object, thread T* expected, U desired,
                                           memory_order, memory_order) {
  static_assert(!atomic_detail::is_64bit<T>, "MSL has no 64-bit compare-exchange");
  if (object->value == *expected) {
    object->value = T(desired);
    return true;
  }
  *expected = object->value;
  return false;
}

#define MPS_OPS_EMU_ATOMIC_FETCH(NAME, EXPR, ALLOWED, WHY)                        \
  template <class T, class U>                                                    \
  T atomic_fetch_##NAME##_explicit(volatile atomic<T>* object, U operand, memory_order) { \
    static_assert(ALLOWED, WHY);                                                 \
    const T old = object->value;                                                 \
    const T b = T(operand);                                                      \
    object->value = EXPR;                                                        \
    return old;                                                                  \
  }
MPS_OPS_EMU_ATOMIC_FETCH(add, T(old + b),
                         (atomic_detail::is_32bit_integer<T> || is_same_v<T, float>),
                         "atomic_fetch_add exists for int, uint and float only")
MPS_OPS_EMU_ATOMIC_FETCH(sub, T(old - b),
                         (atomic_detail::is_32bit_integer<T> || is_same_v<T, float>),
                         "atomic_fetch_sub exists for int, uint and float only")
MPS_OPS_EMU_ATOMIC_FETCH(and, T(old & b), atomic_detail::is_32bit_integer<T>,
                         "atomic_fetch_and exists for int and uint only")
MPS_OPS_EMU_ATOMIC_FETCH(or, T(old | b), atomic_detail::is_32bit_integer<T>,
                         "atomic_fetch_or exists for int and uint only")
MPS_OPS_EMU_ATOMIC_FETCH(xor, T(old ^ b), atomic_detail::is_32bit_integer<T>,
                         "atomic_fetch_xor exists for int and uint only")
MPS_OPS_EMU_ATOMIC_FETCH(min, (b < old ? b : old),
                         (atomic_detail::is_32bit_integer<T> || atomic_detail::is_64bit<T>),
                         "atomic_fetch_min exists for integers only (no float min/max)")
MPS_OPS_EMU_ATOMIC_FETCH(max, (old < b ? b : old),
                         (atomic_detail::is_32bit_integer<T> || atomic_detail::is_64bit<T>),
                         "atomic_fetch_max exists for integers only (no float min/max)")
#undef MPS_OPS_EMU_ATOMIC_FETCH

// Through a bounds-checked pointer (bounded_ptr.h): the object is checked,
// then the raw form above does the work.
#define MPS_OPS_EMU_ATOMIC_BOUNDED(NAME)                                                  \
  template <class P, class... Rest>                                                      \
  auto NAME(::mps_ops_emu::bounded_ptr<P> object, Rest... rest)->decltype(NAME(&*object, rest...)) { \
    return NAME(&*object, rest...);                                                      \
  }
MPS_OPS_EMU_ATOMIC_BOUNDED(atomic_load_explicit)
MPS_OPS_EMU_ATOMIC_BOUNDED(atomic_store_explicit)
MPS_OPS_EMU_ATOMIC_BOUNDED(atomic_exchange_explicit)
MPS_OPS_EMU_ATOMIC_BOUNDED(atomic_compare_exchange_weak_explicit)
MPS_OPS_EMU_ATOMIC_BOUNDED(atomic_fetch_add_explicit)
MPS_OPS_EMU_ATOMIC_BOUNDED(atomic_fetch_sub_explicit)
MPS_OPS_EMU_ATOMIC_BOUNDED(atomic_fetch_and_explicit)
MPS_OPS_EMU_ATOMIC_BOUNDED(atomic_fetch_or_explicit)
MPS_OPS_EMU_ATOMIC_BOUNDED(atomic_fetch_xor_explicit)
MPS_OPS_EMU_ATOMIC_BOUNDED(atomic_fetch_min_explicit)
MPS_OPS_EMU_ATOMIC_BOUNDED(atomic_fetch_max_explicit)
#undef MPS_OPS_EMU_ATOMIC_BOUNDED

}  // namespace metal
