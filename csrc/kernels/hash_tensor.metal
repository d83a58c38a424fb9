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

}  // namespace

// Integers and bool: the xor of the 64-bit integers of the same values (two's
// complement), as the CPU's static_cast<int64_t> then bit cast.
template <typename In>
struct xor_of_integers {
  using state = ulong;
  using params = mps_ops::no_params;
  static state identity() { return 0ul; }
  static state fold(state s, mps_ops::opmath_t<In> v) { return s ^ ulong(long(v)); }
  static state merge(state a, state b) { return a ^ b; }
  static state shuffle_xor(state s, ushort mask) { return mps_ops::shuffle_xor(s, mask); }
  static state finish(state s, constant params&) { return s; }
};

// Floating-point elements by their bits, xored in 32 bits. For a normal
// number the widened double's bits are linear in the element's bits under
// xor, but for a constant: widened(b) = placed(b) ^ normal_constant, where
// placed moves each bit to its place in the double, and the exponent's top
// bit also flips the 4 bits above the rest of the exponent (e + rebias
// carries exactly when that bit is set). So the xor of a slice's widened
// values is placed(xor of its bits), xored with normal_constant where the
// count is odd, and only the other elements (zeros, subnormals,
// infinities, NaN) need their own widening: each adds what its exact
// double differs by from that formula (`fix`). A normal element then costs
// an xor, a count and a range test, where widening it was four times that
// (H200: 0.39x-0.58x torch's CUDA hash).
//   Format: fields of the element's bits, as uint (half and bfloat16 as
//   their 16 bits; bfloat16 shifted to a float's place)
//     bits(v)            the element's bits
//     is_normal(b)       exponent neither 0 nor all ones
//     placed(b)          the linear part of a normal element's double
//     normal_constant()  the rest of it
//     exact(b)           any element's widened double (the CPU's)
template <typename In, typename Format>
struct xor_of_floating_bits {
  struct state {
    uint bits;   // xor of the elements' bits
    uint count;  // elements folded (their parity counts)
    ulong fix;   // xor of exact(b) ^ placed(b) ^ normal_constant over the elements not normal
  };
  using params = mps_ops::no_params;
  static state identity() { return state{0u, 0u, 0ul}; }
  static state fold(state s, mps_ops::opmath_t<In> v) {
    const uint b = Format::bits(v);
    if (!Format::is_normal(b)) {
      s.fix ^= Format::exact(b) ^ Format::placed(b) ^ Format::normal_constant();
    }
    return state{s.bits ^ b, s.count + 1u, s.fix};
  }
  static state merge(state a, state b) { return state{a.bits ^ b.bits, a.count + b.count, a.fix ^ b.fix}; }
  static state shuffle_xor(state s, ushort mask) {
    return state{mps_ops::shuffle_xor(s.bits, mask), mps_ops::shuffle_xor(s.count, mask),
                 mps_ops::shuffle_xor(s.fix, mask)};
  }
  static ulong finish(state s, constant params&) {
    return Format::placed(s.bits) ^ ((s.count & 1u) != 0u ? Format::normal_constant() : 0ul) ^ s.fix;
  }
};

// A float (or a bfloat16 in a float's upper half): sign, 8 exponent bits,
// 23 fraction bits. Normal: the double's high word is the sign, the
// exponent e + 896 (896 = 0x380: for e < 128 that is 0x380 | e, from 128 on
// 0x400 | (e & 0x7f), i.e. 0x380 ^ (e & 0x7f) ^ (e >= 128 ? 0x780 : 0)) and
// the fraction's top 20 bits; the low word the fraction's last 3 bits.
struct float_format {
  static uint bits(float v) { return as_type<uint>(v); }
  static bool is_normal(uint b) { return ((b >> 23) & 0xffu) - 1u < 0xfeu; }
  static ulong placed(uint b) {
    const uint hi = (b & 0x80000000u) | ((b & 0x3ffffff8u) >> 3) | ((b & 0x40000000u) != 0u ? 0x78000000u : 0u);
    return (ulong(hi) << 32) | ulong(b << 29);
  }
  static ulong normal_constant() { return ulong(0x38000000u) << 32; }
  static ulong exact(uint b) { return double_bits(b >> 31, (b >> 23) & 0xffu, b & 0x7fffffu, 23u, 0xffu, 127u); }
};

// A bfloat16's 16 bits, widened as the float of the same upper half.
struct bfloat_format {
  static uint bits(short v) { return uint(ushort(v)) << 16; }
  static bool is_normal(uint b) { return float_format::is_normal(b); }
  static ulong placed(uint b) { return float_format::placed(b); }
  static ulong normal_constant() { return float_format::normal_constant(); }
  static ulong exact(uint b) { return float_format::exact(b); }
};

// A half's 16 bits (a GPU's conversion may replace a NaN's payload, and an
// Apple GPU's may flush subnormals, so the bits are widened, not the
// value): sign, 5 exponent bits, 10 fraction bits. Normal: the exponent e +
// 1008 (0x3f0 ^ (e & 0xf) ^ (e >= 16 ? 0x7f0 : 0)) and the fraction in the
// high word, nothing in the low one.
struct half_format {
  static uint bits(short v) { return uint(ushort(v)); }
  static bool is_normal(uint b) { return ((b >> 10) & 0x1fu) - 1u < 0x1eu; }
  static ulong placed(uint b) {
    const uint hi = ((b & 0x8000u) << 16) | ((b & 0x3fffu) << 10) | ((b & 0x4000u) != 0u ? 0x7f000000u : 0u);
    return ulong(hi) << 32;
  }
  static ulong normal_constant() { return ulong(0x3f000000u) << 32; }
  static ulong exact(uint b) { return double_bits((b >> 15) & 1u, (b >> 10) & 0x1fu, b & 0x3ffu, 10u, 0x1fu, 15u); }
};

template <typename In>
struct hash_tensor_reducer : xor_of_integers<In> {};
template <>
struct hash_tensor_reducer<float> : xor_of_floating_bits<float, float_format> {};
template <typename In>
struct hash_tensor_half_bits_reducer : xor_of_floating_bits<In, half_format> {};
template <typename In>
struct hash_tensor_bfloat_bits_reducer : xor_of_floating_bits<In, bfloat_format> {};

MPS_OPS_FOR_BOOL(REGISTER_REDUCE_ONE_OP, hash_tensor, ulong)
MPS_OPS_FOR_INTEGRAL(REGISTER_REDUCE_ONE_OP, hash_tensor, ulong)
REGISTER_REDUCE_ONE_OP(hash_tensor, ulong, float)
REGISTER_REDUCE_ONE_OP(hash_tensor_half_bits, ulong, short)
REGISTER_REDUCE_ONE_OP(hash_tensor_bfloat_bits, ulong, short)
