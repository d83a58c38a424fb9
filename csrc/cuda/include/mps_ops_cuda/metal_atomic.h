// MSL atomics on the GPU: clang's __atomic builtins, relaxed whatever order
// the source names (MSL itself offers memory_order_relaxed only for these).
// The types and their rules (which types, which operations) are the
// emulator's: what MSL forbids fails to compile here too.
#pragma once

namespace metal {

enum memory_order { memory_order_relaxed, memory_order_seq_cst };

template <class T>
struct atomic {
  static_assert(is_same_v<T, int> || is_same_v<T, uint> || is_same_v<T, bool> ||
                    is_same_v<T, float> || is_same_v<T, ulong> || is_same_v<T, long>,
                "MSL atomics exist for int, uint, bool, float (and 64-bit min/max)");
  T value;
};
using atomic_int = atomic<int>;
using atomic_uint = atomic<uint>;
using atomic_bool = atomic<bool>;
using atomic_float = atomic<float>;
using atomic_ulong = atomic<ulong>;
using atomic_long = atomic<long>;

namespace atomic_detail {
template <class T>
constexpr bool is_32bit_integer = is_same_v<T, int> || is_same_v<T, uint>;
template <class T>
constexpr bool is_64bit = is_same_v<T, ulong> || is_same_v<T, long>;
}  // namespace atomic_detail

template <class T>
T atomic_load_explicit(const volatile atomic<T>* object, memory_order) {
  static_assert(!atomic_detail::is_64bit<T>, "MSL has no 64-bit atomic load");
  return __atomic_load_n(&object->value, __ATOMIC_RELAXED);
}

template <class T, class U>
void atomic_store_explicit(volatile atomic<T>* object, U desired, memory_order) {
  static_assert(!atomic_detail::is_64bit<T>, "MSL has no 64-bit atomic store");
  __atomic_store_n(&object->value, T(desired), __ATOMIC_RELAXED);
}

template <class T, class U>
T atomic_exchange_explicit(volatile atomic<T>* object, U desired, memory_order) {
  static_assert(!atomic_detail::is_64bit<T>, "MSL has no 64-bit atomic exchange");
  return __atomic_exchange_n(&object->value, T(desired), __ATOMIC_RELAXED);
}

template <class T, class U>
bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* object, thread T* expected, U desired,
                                           memory_order, memory_order) {
  static_assert(!atomic_detail::is_64bit<T>, "MSL has no 64-bit compare-exchange");
  return __atomic_compare_exchange_n(&object->value, expected, T(desired), true, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED);
}

#define MPS_OPS_CUDA_ATOMIC_FETCH(NAME, BUILTIN, ALLOWED, WHY)                   \
  template <class T, class U>                                                    \
  T atomic_fetch_##NAME##_explicit(volatile atomic<T>* object, U operand, memory_order) { \
    static_assert(ALLOWED, WHY);                                                 \
    return BUILTIN(&object->value, T(operand), __ATOMIC_RELAXED);                \
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
