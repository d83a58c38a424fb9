// hash_tensor (mode 0): the xor of each slice's elements, each widened first
// as the CPU widens it (floats to double, integers and bool to 64 bits with
// their sign) and taken as the uint64 of its bits. Slices come from
// reduction.h, whose reduce_one merges states in any order: xor is
// associative and commutative, so every mapping gives the CPU's bits.
//
// Floats are widened from their bits, and half and bfloat16 are read as
// their 16-bit patterns (the host binds them as int16, or as int32 pairs):
// a GPU's half-to-float conversion may replace a NaN's payload with its
// canonical NaN (an H100's does), which the CPU's conversion keeps, and an
// Apple GPU's may flush subnormals.
#include <metal_stdlib>
#include <mps_ops/reduction.h>
using namespace metal;

namespace {

constexpr constant ulong double_fraction_mask = 0x000ffffffffffffful;

// The bits of the double equal to a subnormal binary floating-point value
// (fraction != 0, `fraction_bits` wide, exponent biased by `bias`), as Metal
// has no double: a normal double. fraction * 2**(1 - bias - fraction_bits),
// its leading one at bit `top`, is 2**(top + 1 - bias - fraction_bits) times
// 1.rest.
inline ulong subnormal_double_bits(uint sign, uint fraction, uint fraction_bits, uint bias) {
  const uint top = 31u - clz(fraction);
  const ulong rest = (ulong(fraction) << (52u - top)) & double_fraction_mask;
  return (ulong(sign) << 63) | (ulong(top + 1u + 1023u - bias - fraction_bits) << 52) | rest;
}

// A binary floating-point format of `Bits` bits (16 or 32): sign at the top,
// then the exponent (biased by `Bias`), then `FractionBits` of fraction, the
// exponent's top bit just below the sign. Its values' doubles, from the
// bits alone:
//   a normal value: sign | ((magnitude << (52 - FractionBits)) + rebias)
//   a zero: its sign alone
// with the sign at bit 63 and rebias the exponent's change of bias, in
// place. Subnormals (renormalised), infinities and NaN (quieted, the payload
// kept, as a CPU's conversion makes it) are rare.
template <uint Bits, uint FractionBits, uint Bias>
struct binary_format {
  static constexpr uint bits_per_pattern() { return Bits; }
  static constexpr uint pattern_mask() { return Bits == 32u ? 0xffffffffu : (1u << Bits) - 1u; }
  static constexpr uint sign_bit() { return 1u << (Bits - 1u); }
  static constexpr uint exponent_top_bit() { return 1u << (Bits - 2u); }
  static constexpr uint normal_min() { return 1u << FractionBits; }
  static constexpr uint special_min() { return sign_bit() - normal_min(); }  // the exponent all ones
  static constexpr uint shift() { return 52u - FractionBits; }
  static constexpr ulong rebias() { return ulong(1023u - Bias) << 52; }

  static bool rare(uint h) {
    const uint magnitude = h & (sign_bit() - 1u);
    return (magnitude >= special_min()) | ((magnitude != 0u) & (magnitude < normal_min()));
  }
  // Without a branch, right for all but the rare.
  static ulong common_bits(uint h) {
    const ulong sign = ulong(h & sign_bit()) << (64u - Bits);
    const uint magnitude = h & (sign_bit() - 1u);
    return magnitude == 0u ? sign : sign | ((ulong(magnitude) << shift()) + rebias());
  }
  static ulong bits(uint h) {
    const uint exponent_field = h & special_min(), fraction = h & (normal_min() - 1u);
    const ulong sign = ulong(h & sign_bit()) << (64u - Bits);
    if (exponent_field == special_min()) {
      const ulong quiet = fraction != 0u ? 0x0008000000000000ul : 0ul;
      return sign | 0x7ff0000000000000ul | quiet | (ulong(fraction) << shift());
    }
    if (exponent_field == 0u && fraction != 0u) {
      return subnormal_double_bits(h >> (Bits - 1u), fraction, FractionBits, Bias);
    }
    return common_bits(h);
  }
};

using half_format = binary_format<16, 10, 15>;
using bfloat_format = binary_format<16, 7, 127>;
using float_format = binary_format<32, 23, 127>;

// The state every hash_tensor reducer keeps: the xor of 64-bit widenings,
// merged by xor in any order.
struct xor_state {
  using state = ulong;
  using params = mps_ops::no_params;
  static state identity() { return 0ul; }
  static state merge(state a, state b) { return a ^ b; }
  static state shuffle_xor(state s, ushort mask) { return mps_ops::shuffle_xor(s, mask); }
  static state finish(state s, constant params&) { return s; }
};

// A loaded value as a 32-bit word of patterns: a float's bits, an int16's
// (one 16-bit pattern, the high half +0), an int32's (two patterns).
inline uint pattern_word(float v) {
  return as_type<uint>(v);
}
inline uint pattern_word(short v) {
  return uint(ushort(v));
}
inline uint pattern_word(int v) {
  return uint(v);
}

// The xor of the widenings of floating-point patterns, Format's, held one
// or two to a 32-bit word (hash_tensor.mm binds contiguous half and
// bfloat16 slices of an even length as int32 pairs, other half and bfloat16
// slices as int16; a +0 pattern widens to 0 and changes no xor). Floats
// stay one to a word: read in pairs of 64-bit words they measured no faster
// on an H200 (0.60x against 0.62x torch's kernel) and their kernel spilled.
//
// A run's common widenings xor to a function of two words, so a run costs
// a few word operations per word instead of a widening per pattern (the
// widenings one by one held the H200's integer pipe at 76% with DRAM at
// 40%, for half; an Apple GPU issues the same integer work). For a nonzero
// magnitude m whose exponent's top bit is t,
//   (m << shift) + rebias == (m << shift) ^ rebias ^ (t ? top_carry : 0)
// as rebias holds no bit of m << shift but t's, whose carry ends in one bit
// (1 << 62) that neither holds. So a run's common widenings xor to
//   sign parity << 63 ^ (xor of the m) << shift
//     ^ (odd count of nonzero m ? rebias : 0) ^ (odd count of t ? top_carry : 0)
// The xor of the run's words, a word's patterns folded together, gives the
// xor of its patterns: sign parity at the sign bit, the m's xor below it,
// t's parity at the exponent's top bit. The word m + (sign bit - 1) per
// pattern sets the sign bit where m != 0 (without a carry into the next
// pattern), so the xor of those counts nonzero magnitudes. Where a run holds
// a rare pattern, each rare one's common bits are swapped for its bits
// (xor is its own inverse).
template <typename In, typename Format>
struct xor_of_patterns : xor_state {
  using runs = mps_ops::runs_merged;
  static constexpr uint per_word() { return 32u / Format::bits_per_pattern(); }
  // A word's sign bits (and a constant per pattern times lanes()).
  static constexpr uint lanes() { return per_word() == 2u ? 0x10001u : 1u; }
  static constexpr uint signs() { return Format::sign_bit() * lanes(); }
  static constexpr ulong top_carry() {
    const ulong top = ulong(Format::exponent_top_bit()) << Format::shift();
    return ((top + Format::rebias()) ^ top) ^ Format::rebias();
  }

  static ulong word_bits(uint w) {
    return per_word() == 2u ? Format::bits(w & 0xffffu) ^ Format::bits(w >> 16) : Format::bits(w);
  }

  static state fold(state s, mps_ops::opmath_t<In> v) { return s ^ word_bits(pattern_word(v)); }
  template <uint run>
  static state of_run(thread const mps_ops::opmath_t<In>* values) {
    uint patterns = 0u, nonzero = 0u, rare = 0u;
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      const uint w = pattern_word(values[k]);
      const uint magnitudes = w & ~signs();
      // Each pattern's sign bit: m != 0, m >= normal_min, m >= special_min.
      const uint is_nonzero = magnitudes + (Format::sign_bit() - 1u) * lanes();
      const uint is_normal_or_more = magnitudes + (Format::sign_bit() - Format::normal_min()) * lanes();
      const uint is_special = magnitudes + (Format::sign_bit() - Format::special_min()) * lanes();
      patterns ^= w;
      nonzero ^= is_nonzero;
      rare |= is_special | (is_nonzero ^ is_normal_or_more);
    }
    const uint folded = per_word() == 2u ? (patterns ^ (patterns >> 16)) & 0xffffu : patterns;
    const uint odd_nonzero = (per_word() == 2u ? nonzero ^ (nonzero >> 16) : nonzero) & Format::sign_bit();
    state s = (ulong(folded & Format::sign_bit()) << (64u - Format::bits_per_pattern())) |
              ((ulong(folded & (Format::sign_bit() - 1u)) << Format::shift()) ^
               (odd_nonzero != 0u ? Format::rebias() : 0ul) ^
               ((folded & Format::exponent_top_bit()) != 0u ? top_carry() : 0ul));
    if ((rare & signs()) != 0u) {
      // One copy of the exact widening, in a rolled loop over the run's
      // patterns rotated through registers: indexed by k, the run went to
      // a copy in local memory, stored on every run; unrolled, each
      // widening took registers of its own.
      uint rest[run];
      _Pragma("clang loop unroll(full)")
      for (uint k = 0; k < run; ++k) {
        rest[k] = pattern_word(values[k]);
      }
      _Pragma("clang loop unroll(disable)")
      for (uint k = 0; k < per_word() * run; ++k) {
        const uint h = rest[0] & Format::pattern_mask();
        if (Format::rare(h)) {
          s ^= Format::common_bits(h) ^ Format::bits(h);
        }
        // The word's next pattern, or the next word.
        const bool word_done = k % per_word() == per_word() - 1u;
        const uint next_pattern = per_word() == 2u ? rest[0] >> 16 : 0u;
        _Pragma("clang loop unroll(full)")
        for (uint j = 0; j + 1 < run; ++j) {
          rest[j] = word_done ? rest[j + 1] : rest[j];
        }
        rest[0] = word_done ? rest[0] : next_pattern;
      }
    }
    return s;
  }
};

// Integers and bool: the 64-bit integer of the same value (two's
// complement), as the CPU's static_cast<int64_t> then bit cast.
template <typename In>
struct xor_of_integers : xor_state {
  static state fold(state s, mps_ops::opmath_t<In> v) { return s ^ ulong(long(v)); }
};

}  // namespace

template <typename In>
struct hash_tensor_reducer : xor_of_integers<In> {};
template <>
struct hash_tensor_reducer<float> : xor_of_patterns<float, float_format> {};
template <typename In>
struct hash_tensor_half_bits_reducer : xor_of_patterns<In, half_format> {};
template <typename In>
struct hash_tensor_bfloat_bits_reducer : xor_of_patterns<In, bfloat_format> {};
template <typename In>
struct hash_tensor_half_pairs_reducer : xor_of_patterns<In, half_format> {};
template <typename In>
struct hash_tensor_bfloat_pairs_reducer : xor_of_patterns<In, bfloat_format> {};

MPS_OPS_FOR_BOOL(REGISTER_REDUCE_ONE_OP_WITHIN_256, hash_tensor, ulong)
MPS_OPS_FOR_INTEGRAL(REGISTER_REDUCE_ONE_OP_WITHIN_256, hash_tensor, ulong)
REGISTER_REDUCE_ONE_OP_WITHIN_256(hash_tensor, ulong, float)
REGISTER_REDUCE_ONE_OP_WITHIN_256(hash_tensor_half_bits, ulong, short)
REGISTER_REDUCE_ONE_OP_WITHIN_256(hash_tensor_bfloat_bits, ulong, short)
REGISTER_REDUCE_ONE_OP_WITHIN_256(hash_tensor_half_pairs, ulong, int)
REGISTER_REDUCE_ONE_OP_WITHIN_256(hash_tensor_bfloat_pairs, ulong, int)
