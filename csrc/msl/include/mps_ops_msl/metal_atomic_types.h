// MSL's atomic types and their rules (which types, which operations exist),
// the same for every target; each target's metal_atomic.h implements the
// operations (the emulator's plainly, one threadgroup at a time; the CUDA
// target's with clang's relaxed __atomic builtins).
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

}  // namespace metal
