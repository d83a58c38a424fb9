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

// The high word of the double of an infinity or NaN: its sign bit in place,
// its fraction shifted into the double's high word (`fraction_high`). A NaN
// (`is_nan`: a nonzero fraction, whose high-word part may be 0) keeps its
// sign and payload and comes out quiet, as a CPU's float-to-double
// conversion makes it.
inline uint special_high_word(uint sign, bool is_nan, uint fraction_high) {
  return sign | 0x7ff00000u | (is_nan ? 0x80000u : 0u) | fraction_high;
}

// Whether a float's bits widen other than a normal number's or a zero's: a
// subnormal (renormalised), an infinity or a NaN (an all-ones exponent).
// Tested on the magnitude with `&` and `|`, which compile to predicate
// logic without a branch (the exponent and fraction tested apart cost the
// H200 five instructions per element).
inline bool float_is_special(uint bits) {
  const uint magnitude = bits & 0x7fffffffu;
  return (magnitude >= 0x7f800000u) | ((magnitude != 0u) & (magnitude < 0x800000u));
}

// A normal float's or a zero's double from its bits, without a branch: in
// 32-bit words, the shifted magnitude plus the exponent's rebias (896 << 20,
// carry-free) and the fraction's last three bits; a zero keeps its sign
// alone. Branch-free so that a run of loads is all issued before its
// widenings: a branch per element made the H200's compiler consume each
// load before issuing the next (one load in flight per thread, 43
// instructions per element), and an Apple GPU stalls the same way on a load
// its branch waits for. Infinities and NaN are left to float_bits_widened
// with the subnormals: they are as rare, and selecting them here cost every
// element five instructions. (A GPU does 64-bit integer work as pairs of
// 32-bit instructions.)
inline ulong float_bits_widened_ordinary(uint bits) {
  const uint sign = bits & 0x80000000u;
  const uint magnitude = bits & 0x7fffffffu;
  const uint hi = magnitude == 0u ? sign : sign | ((magnitude >> 3) + 0x38000000u);
  return (ulong(hi) << 32) | ulong(bits << 29);
}

// Any float's double from its bits.
inline ulong float_bits_widened(uint bits) {
  const uint exponent = (bits >> 23) & 0xffu;
  const uint fraction = bits & 0x7fffffu;
  if (exponent == 0xffu) {
    return (ulong(special_high_word(bits & 0x80000000u, fraction != 0u, fraction >> 3)) << 32) | ulong(bits << 29);
  }
  if (exponent == 0u && fraction != 0u) {
    return subnormal_double_bits(bits >> 31, fraction, 23u, 127u);
  }
  return float_bits_widened_ordinary(bits);
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

// The reducers differ in how an element widens (`Widen`), nothing else. A
// Widen gives `bits` (any value), `common_bits` (without a branch, right
// for all but the rare values) and `rare` (which values those are). A run
// of loaded values (reduction.h's run_folding) xors their common_bits, then,
// only where the run holds a rare value, swaps each rare one's common_bits
// for its bits: xor is its own inverse.
template <typename In, typename Widen>
struct xor_of_widened {
  using state = ulong;
  using params = mps_ops::no_params;
  using runs = mps_ops::runs_merged;
  static state identity() { return 0ul; }
  static state fold(state s, mps_ops::opmath_t<In> v) { return s ^ Widen::bits(v); }
  template <uint run>
  static state of_run(thread const mps_ops::opmath_t<In>* values) {
    state s = 0ul;
    bool any_rare = false;
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      s ^= Widen::common_bits(values[k]);
      // `|`, not `||`: the short circuit compiled to a branch per element.
      any_rare = any_rare | Widen::rare(values[k]);
    }
    if (any_rare) {
      for (uint k = 0; k < run; ++k) {
        if (Widen::rare(values[k])) {
          s ^= Widen::common_bits(values[k]) ^ Widen::bits(values[k]);
        }
      }
    }
    return s;
  }
  static state merge(state a, state b) { return a ^ b; }
  static state shuffle_xor(state s, ushort mask) { return mps_ops::shuffle_xor(s, mask); }
  static state finish(state s, constant params&) { return s; }
};

// Integers and bool widen without a branch; a float's subnormals,
// infinities and NaN are rare.
struct widen_value {
  template <typename T>
  static ulong bits(T value) {
    return widened_bits(value);
  }
  template <typename T>
  static ulong common_bits(T value) {
    return widened_bits(value);
  }
  template <typename T>
  static bool rare(T) {
    return false;
  }
  static ulong common_bits(float value) { return float_bits_widened_ordinary(as_type<uint>(value)); }
  static bool rare(float value) { return float_is_special(as_type<uint>(value)); }
};

// A 16-bit float format's bit patterns (the low 16 bits of h): sign at bit
// 15, magnitude below it with the exponent's top bit at bit 14. A normal
// pattern's double has the high word sign | ((magnitude << shift) + bias),
// a zero's its sign alone, and no format here sets a bit of the low word
// (their fractions fit in the high word). A Format gives shift, bias,
// normal_min (the least normal magnitude) and special_min (the infinity's).
template <typename Format>
struct pattern_of {
  // Subnormals, infinities and NaN: two bounds on the magnitude, joined
  // with `|` and `&` (predicate logic, no branch).
  static bool rare(uint h) {
    const uint magnitude = h & 0x7fffu;
    return (magnitude >= Format::special_min()) | ((magnitude != 0u) & (magnitude < Format::normal_min()));
  }
  // Without a branch, right for all but the rare: the shifted magnitude
  // plus the exponent's rebias, or a zero's sign.
  static ulong common_bits(uint h) {
    const uint sign = (h & 0x8000u) << 16;
    const uint magnitude = h & 0x7fffu;
    return ulong(magnitude == 0u ? sign : sign | ((magnitude << Format::shift()) + Format::bias())) << 32;
  }
  static ulong bits(uint h) {
    const uint exponent_field = h & Format::special_min(), fraction = h & (Format::normal_min() - 1u);
    if (exponent_field == Format::special_min()) {
      return ulong(special_high_word((h & 0x8000u) << 16, fraction != 0u, fraction << Format::shift())) << 32;
    }
    if (exponent_field == 0u && fraction != 0u) {
      return subnormal_double_bits((h >> 15) & 1u, fraction, Format::fraction_bits(), Format::exponent_bias());
    }
    return common_bits(h);
  }
};

// Half: 5 exponent bits biased by 15 (rebiased by 1008 for a double's 1023),
// 10 fraction bits.
struct half_format {
  static constexpr uint shift() { return 10u; }
  static constexpr uint fraction_bits() { return 10u; }
  static constexpr uint exponent_bias() { return 15u; }
  static constexpr uint bias() { return 1008u << 20; }
  static constexpr uint normal_min() { return 0x400u; }
  static constexpr uint special_min() { return 0x7c00u; }
};
// Bfloat16: a float's upper half (8 exponent bits biased by 127, 7 fraction
// bits).
struct bfloat_format {
  static constexpr uint shift() { return 13u; }
  static constexpr uint fraction_bits() { return 7u; }
  static constexpr uint exponent_bias() { return 127u; }
  static constexpr uint bias() { return 896u << 20; }
  static constexpr uint normal_min() { return 0x80u; }
  static constexpr uint special_min() { return 0x7f80u; }
};

// The xor of 16-bit float patterns' widenings, taken two patterns per
// 32-bit word (hash_tensor.mm binds contiguous half and bfloat16 slices of
// an even length as int pairs; other slices as int16, a lone pattern being
// a pair whose high half is +0, which widens to 0 and changes no xor).
//
// A run's common widenings xor to a function of three words, so the run
// costs a few word operations per pair instead of a widening per pattern
// (the widenings, one by one, held the H200's integer pipe at 76% with
// DRAM at 40%; an Apple GPU issues the same integer work). For a nonzero
// magnitude m with the exponent's top bit t,
//   (m << shift) + bias == (m << shift) ^ bias ^ (t ? top_carry() : 0),
// since bias holds no bit of m << shift but the top one, whose carry into
// bias ends in one bit (1 << 30) that neither holds. So the run's high
// words xor to
//   sign parity << 31 ^ (xor of m) << shift
//     ^ (odd count of nonzero m ? bias : 0) ^ (odd count of t ? top_carry() : 0)
// where the xor of the run's words, its two halves folded, gives the xor
// of its patterns (sign parity at bit 15, m's xor below, t's parity at
// bit 14), and a word m + 0x7fff per half sets bit 15 where m != 0, so the
// xor of those words counts nonzero magnitudes. Where the run holds a rare
// pattern, each rare one's common bits are swapped for its bits (xor is its
// own inverse).
template <typename In, typename Format>
struct xor_of_patterns {
  using state = ulong;
  using params = mps_ops::no_params;
  using runs = mps_ops::runs_merged;
  using pattern = pattern_of<Format>;
  static constexpr uint top_carry() {
    return (((1u << (14u + Format::shift())) + Format::bias()) ^ (1u << (14u + Format::shift()))) ^ Format::bias();
  }

  static uint word(mps_ops::opmath_t<In> v) { return sizeof(In) == 2 ? uint(ushort(v)) : uint(v); }
  static ulong word_bits(uint w) { return pattern::bits(w & 0xffffu) ^ pattern::bits(w >> 16); }

  static state identity() { return 0ul; }
  static state fold(state s, mps_ops::opmath_t<In> v) { return s ^ word_bits(word(v)); }
  template <uint run>
  static state of_run(thread const mps_ops::opmath_t<In>* values) {
    uint patterns = 0u, nonzero = 0u, rare = 0u;
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      const uint w = word(values[k]);
      const uint magnitudes = w & 0x7fff7fffu;
      // Bit 15 of each half: m != 0, m >= normal_min, m >= special_min
      // (no half carries into the next: m + 0x7fff < 0x10000).
      const uint is_nonzero = magnitudes + 0x7fff7fffu;
      const uint is_normal_or_more = magnitudes + (0x8000u - Format::normal_min()) * 0x10001u;
      const uint is_special = magnitudes + (0x8000u - Format::special_min()) * 0x10001u;
      patterns ^= w;
      nonzero ^= is_nonzero;
      rare |= is_special | (is_nonzero ^ is_normal_or_more);
    }
    const uint folded = patterns ^ (patterns >> 16);
    const bool odd_nonzero = ((nonzero ^ (nonzero >> 16)) & 0x8000u) != 0u;
    const uint high = ((folded & 0x8000u) << 16) | (((folded & 0x7fffu) << Format::shift()) ^
                                                     (odd_nonzero ? Format::bias() : 0u) ^
                                                     ((folded & 0x4000u) != 0u ? top_carry() : 0u));
    state s = ulong(high) << 32;
    if ((rare & 0x80008000u) != 0u) {
      // One copy of the exact widening, in a rolled loop over the run
      // rotated through registers: indexed by k, the run went to a copy
      // in local memory, stored on every run; unrolled, each widening took
      // registers of its own.
      uint rest[run];
      _Pragma("clang loop unroll(full)")
      for (uint k = 0; k < run; ++k) {
        rest[k] = word(values[k]);
      }
      _Pragma("clang loop unroll(disable)")
      for (uint k = 0; k < 2 * run; ++k) {
        const uint h = rest[0] & 0xffffu;
        if (pattern::rare(h)) {
          s ^= pattern::common_bits(h) ^ pattern::bits(h);
        }
        // The word's high pattern next, then the next word's.
        const uint next = rest[0] >> 16;
        _Pragma("clang loop unroll(full)")
        for (uint j = 0; j + 1 < run; ++j) {
          rest[j] = (k & 1u) != 0u ? rest[j + 1] : rest[j];
        }
        rest[0] = (k & 1u) != 0u ? rest[0] : next;
      }
    }
    return s;
  }
  static state merge(state a, state b) { return a ^ b; }
  static state shuffle_xor(state s, ushort mask) { return mps_ops::shuffle_xor(s, mask); }
  static state finish(state s, constant params&) { return s; }
};

template <typename In>
struct hash_tensor_reducer : xor_of_widened<In, widen_value> {};
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
