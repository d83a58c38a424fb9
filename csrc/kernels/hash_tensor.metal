// hash_tensor (mode 0): the xor of each slice's elements, each widened first
// as the CPU widens it (floats to double, integers and bool to 64 bits with
// their sign) and taken as the uint64 of its bits. Slices come from
// reduction.h, whose reduce_one merges states in any order: xor is
// associative and commutative, so every mapping gives the CPU's bits.
#include <metal_stdlib>
#include <mps_ops/reduction.h>
using namespace metal;

namespace {

// Integers and bool: the 64-bit integer of the same value (two's complement),
// as the CPU's static_cast<int64_t> then bit cast.
template <typename T>
ulong widened_bits(T value) {
  return ulong(long(value));
}

// float (and half and bfloat, which reduce as float, exactly): the bits of
// the double of the same value, built from the float's bits because Metal has
// no double. Subnormal floats are normal doubles; a NaN keeps its sign and
// payload and comes out quiet, as a CPU's float-to-double conversion makes it.
template <>
ulong widened_bits<float>(float value) {
  const uint bits = as_type<uint>(value);
  const ulong sign = ulong(bits >> 31) << 63;
  const uint exponent = (bits >> 23) & 0xffu;
  const uint mantissa = bits & 0x7fffffu;
  constexpr ulong double_exponent_all_ones = 0x7ff0000000000000ul;
  constexpr ulong double_quiet_bit = 0x0008000000000000ul;
  constexpr uint fraction_shift = 52 - 23;
  if (exponent == 0xffu) {
    return sign | double_exponent_all_ones | (mantissa != 0 ? double_quiet_bit : 0ul) |
           (ulong(mantissa) << fraction_shift);
  }
  if (exponent == 0u) {
    if (mantissa == 0u) {
      return sign;
    }
    // mantissa * 2**-149 with its leading one at bit `top`: 2**(top - 149)
    // times 1.fraction, the fraction being the bits below the leading one.
    const uint top = 31u - clz(mantissa);
    const ulong fraction = (ulong(mantissa) << (52u - top)) & 0x000ffffffffffffful;
    return sign | (ulong(top + (1023 - 149)) << 52) | fraction;
  }
  // Rebias: float's 127 to double's 1023.
  return sign | (ulong(exponent + (1023 - 127)) << 52) | (ulong(mantissa) << fraction_shift);
}

}  // namespace

template <typename In>
struct hash_tensor_reducer {
  using state = ulong;
  using params = mps_ops::no_params;
  static state identity() { return 0ul; }
  static state fold(state s, mps_ops::opmath_t<In> v) { return s ^ widened_bits(v); }
  static state merge(state a, state b) { return a ^ b; }
  static state shuffle_xor(state s, ushort mask) { return mps_ops::shuffle_xor(s, mask); }
  static state finish(state s, constant params&) { return s; }
};

MPS_OPS_FOR_ALL_BUT_WIDE_UNSIGNED(REGISTER_REDUCE_ONE_OP, hash_tensor, ulong)
