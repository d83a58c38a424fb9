// hash_tensor (mode 0): the xor of each slice's elements, each widened first
// as the CPU widens it (floats to double, integers and bool to 64 bits with
// their sign) and taken as the uint64 of its bits. Slices come from
// reduction.h, whose reduce_one merges states in any order: xor is
// associative and commutative, so every mapping gives the CPU's bits.
//
// Half and bfloat16 are read as their 16-bit patterns (the host binds them
// as int16) and widened from the bits: a GPU's half-to-float conversion may
// replace a NaN's payload with its canonical NaN (an H100's does), which the
// CPU's conversion keeps.
#include <metal_stdlib>
#include <mps_ops/reduction.h>
using namespace metal;

namespace {

constexpr constant ulong double_exponent_all_ones = 0x7ff0000000000000ul;
constexpr constant ulong double_quiet_bit = 0x0008000000000000ul;
constexpr constant ulong double_fraction_mask = 0x000ffffffffffffful;

// The bits of the double equal to a binary floating-point value given by
// its fields (`fraction_bits` wide, exponent biased by `bias`, `max_exponent`
// for infinities and NaN), as Metal has no double. Subnormals become normal
// doubles; a NaN keeps its sign and payload and comes out quiet, as a CPU's
// float-to-double conversion makes it.
inline ulong double_bits(uint sign, uint exponent, uint fraction, uint fraction_bits, uint max_exponent, uint bias) {
  const ulong sign_bit = ulong(sign) << 63;
  const uint shift = 52 - fraction_bits;
  if (exponent == max_exponent) {
    return sign_bit | double_exponent_all_ones | (fraction != 0 ? double_quiet_bit : 0ul) | (ulong(fraction) << shift);
  }
  if (exponent == 0u) {
    if (fraction == 0u) {
      return sign_bit;
    }
    // fraction * 2**(1 - bias - fraction_bits), its leading one at bit
    // `top`: 2**(top + 1 - bias - fraction_bits) times 1.rest.
    const uint top = 31u - clz(fraction);
    const ulong rest = (ulong(fraction) << (52u - top)) & double_fraction_mask;
    return sign_bit | (ulong(top + 1u + 1023u - bias - fraction_bits) << 52) | rest;
  }
  return sign_bit | (ulong(exponent + 1023u - bias) << 52) | (ulong(fraction) << shift);
}

// A float's double from its bits. Normal numbers (nearly every element)
// take the short way: in 32-bit words, the shifted magnitude plus the
// exponent's rebias (896 << 20, carry-free) and the fraction's last three
// bits; zeros, infinities and NaN are short too. Only subnormals, which must
// be renormalised, go through double_bits. (A GPU does 64-bit integer work
// as pairs of 32-bit instructions: the H200 profile showed the general
// path's instructions, three times torch's sum's, as the limit.)
inline ulong float_bits_widened(uint bits) {
  const uint sign = bits & 0x80000000u;
  const uint magnitude = bits & 0x7fffffffu;
  const uint exponent = magnitude >> 23;
  uint hi;
  if (exponent - 1u < 0xfeu) {
    hi = sign | ((magnitude >> 3) + 0x38000000u);
  } else if (exponent == 0xffu) {
    const uint fraction = bits & 0x7fffffu;
    hi = sign | 0x7ff00000u | (fraction != 0u ? 0x80000u : 0u) | (fraction >> 3);
  } else if (magnitude == 0u) {
    hi = sign;
  } else {
    return double_bits(bits >> 31, 0u, bits & 0x7fffffu, 23u, 0xffu, 127u);
  }
  return (ulong(hi) << 32) | ulong(bits << 29);
}

// Integers and bool: the 64-bit integer of the same value (two's complement),
// as the CPU's static_cast<int64_t> then bit cast.
template <typename T>
ulong widened_bits(T value) {
  return ulong(long(value));
}

template <>
ulong widened_bits<float>(float value) {
  return float_bits_widened(as_type<uint>(value));
}

}  // namespace

// The reducers differ in how an element widens (`Widen`), nothing else.
template <typename In, typename Widen>
struct xor_of_widened {
  using state = ulong;
  using params = mps_ops::no_params;
  static state identity() { return 0ul; }
  static state fold(state s, mps_ops::opmath_t<In> v) { return s ^ Widen::bits(v); }
  static state merge(state a, state b) { return a ^ b; }
  static state shuffle_xor(state s, ushort mask) { return mps_ops::shuffle_xor(s, mask); }
  static state finish(state s, constant params&) { return s; }
};

struct widen_value {
  template <typename T>
  static ulong bits(T value) {
    return widened_bits(value);
  }
};

// An int16 element holding a half's bits, widened from the bits alone (a
// GPU's conversion may replace a NaN's payload, and an Apple GPU's may
// flush subnormals): normal halves in two instructions (the shifted
// magnitude plus the exponent's rebias, 1008 << 20), the rest through
// double_bits.
struct widen_half_bits {
  static ulong bits(short value) {
    const uint h = uint(ushort(value));
    const uint exponent = (h >> 10) & 0x1fu;
    if (exponent - 1u < 0x1eu) {
      return ulong(((h & 0x8000u) << 16) | (((h & 0x7fffu) << 10) + 0x3f000000u)) << 32;
    }
    return double_bits(h >> 15, exponent, h & 0x3ffu, 10u, 0x1fu, 15u);
  }
};

// An int16 element holding a bfloat16's bits: a float's upper half.
struct widen_bfloat_bits {
  static ulong bits(short value) { return float_bits_widened(uint(ushort(value)) << 16); }
};

template <typename In>
struct hash_tensor_reducer : xor_of_widened<In, widen_value> {};
template <typename In>
struct hash_tensor_half_bits_reducer : xor_of_widened<In, widen_half_bits> {};
template <typename In>
struct hash_tensor_bfloat_bits_reducer : xor_of_widened<In, widen_bfloat_bits> {};

MPS_OPS_FOR_BOOL(REGISTER_REDUCE_ONE_OP, hash_tensor, ulong)
MPS_OPS_FOR_INTEGRAL(REGISTER_REDUCE_ONE_OP, hash_tensor, ulong)
REGISTER_REDUCE_ONE_OP(hash_tensor, ulong, float)
REGISTER_REDUCE_ONE_OP(hash_tensor_half_bits, ulong, short)
REGISTER_REDUCE_ONE_OP(hash_tensor_bfloat_bits, ulong, short)
