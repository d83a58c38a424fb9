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

// A half's bits (the low 16 bits of h), widened from the bits alone (a
// GPU's conversion may replace a NaN's payload, and an Apple GPU's may
// flush subnormals): normal halves take the shifted magnitude plus the
// exponent's rebias (1008 << 20) and zeros their sign, without a branch;
// subnormals, infinities and NaN are rare, as float_bits_widened_ordinary
// says why. A half's double has no bits in its low word.
struct half_pattern {
  static bool rare(uint h) {
    const uint magnitude = h & 0x7fffu;
    return (magnitude >= 0x7c00u) | ((magnitude != 0u) & (magnitude < 0x400u));
  }
  static ulong common_bits(uint h) {
    const uint sign = (h & 0x8000u) << 16;
    const uint finite = sign | (((h & 0x7fffu) << 10) + 0x3f000000u);
    return ulong((h & 0x7fffu) == 0u ? sign : finite) << 32;
  }
  static ulong bits(uint h) {
    const uint exponent = (h >> 10) & 0x1fu, fraction = h & 0x3ffu;
    if (exponent == 0x1fu) {
      return ulong(special_high_word((h & 0x8000u) << 16, fraction != 0u, fraction << 10)) << 32;
    }
    if (exponent == 0u && fraction != 0u) {
      return subnormal_double_bits((h >> 15) & 1u, fraction, 10u, 15u);
    }
    return common_bits(h);
  }
};

// A bfloat16's bits (the low 16 bits of h): a float's upper half.
struct bfloat_pattern {
  static bool rare(uint h) { return float_is_special(h << 16); }
  static ulong common_bits(uint h) { return float_bits_widened_ordinary(h << 16); }
  static ulong bits(uint h) { return float_bits_widened(h << 16); }
};

// An int16 element holding a half's or a bfloat16's bits (Pattern says
// which).
template <typename Pattern>
struct widen_16_bits {
  static uint pattern(short value) { return uint(ushort(value)); }
  static bool rare(short value) { return Pattern::rare(pattern(value)); }
  static ulong common_bits(short value) { return Pattern::common_bits(pattern(value)); }
  static ulong bits(short value) { return Pattern::bits(pattern(value)); }
};

// Two elements per load (hash_tensor.mm binds contiguous half and bfloat16
// slices of an even length so): an int word of two bit patterns of
// Pattern. xor takes the two in either order; where one is rare, the
// other's common bits are its bits, so the run's swap leaves it. (Float
// slices read in pairs of 64-bit words measured no faster on an H200, 0.60x
// against 0.62x torch's kernel, and their kernel spilled.)
template <typename Pattern>
struct widen_pair {
  static uint low(int w) { return uint(w) & 0xffffu; }
  static uint high(int w) { return uint(w) >> 16; }
  static bool rare(int w) { return Pattern::rare(low(w)) | Pattern::rare(high(w)); }
  static ulong common_bits(int w) { return Pattern::common_bits(low(w)) ^ Pattern::common_bits(high(w)); }
  static ulong bits(int w) { return Pattern::bits(low(w)) ^ Pattern::bits(high(w)); }
};

template <typename In>
struct hash_tensor_reducer : xor_of_widened<In, widen_value> {};
template <typename In>
struct hash_tensor_half_bits_reducer : xor_of_widened<In, widen_16_bits<half_pattern>> {};
template <typename In>
struct hash_tensor_bfloat_bits_reducer : xor_of_widened<In, widen_16_bits<bfloat_pattern>> {};
template <typename In>
struct hash_tensor_half_pairs_reducer : xor_of_widened<In, widen_pair<half_pattern>> {};
template <typename In>
struct hash_tensor_bfloat_pairs_reducer : xor_of_widened<In, widen_pair<bfloat_pattern>> {};

MPS_OPS_FOR_BOOL(REGISTER_REDUCE_ONE_OP_WITHIN_256, hash_tensor, ulong)
MPS_OPS_FOR_INTEGRAL(REGISTER_REDUCE_ONE_OP_WITHIN_256, hash_tensor, ulong)
REGISTER_REDUCE_ONE_OP_WITHIN_256(hash_tensor, ulong, float)
REGISTER_REDUCE_ONE_OP_WITHIN_256(hash_tensor_half_bits, ulong, short)
REGISTER_REDUCE_ONE_OP_WITHIN_256(hash_tensor_bfloat_bits, ulong, short)
REGISTER_REDUCE_ONE_OP_WITHIN_256(hash_tensor_half_pairs, ulong, int)
REGISTER_REDUCE_ONE_OP_WITHIN_256(hash_tensor_bfloat_pairs, ulong, int)
