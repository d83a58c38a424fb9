// Division by a divisor the host knows, without a divide instruction: GPUs
// (Apple's and NVIDIA's alike) have no integer divider and run a 32-bit
// division as a sequence of some twenty instructions, where a multiply-high,
// an add and a shift do here. Granlund and Montgomery's method ("Division by
// invariant integers using multiplication", PLDI 1994): floor(n / d) =
// floor((t + n) / 2**l) with t = floor(m * n / 2**32), l = ceil(log2(d)) and
// m = floor(2**32 * (2**l - d) / d) + 1, exact for every 32-bit n. Plain C++
// that MSL and the host compiler both accept (`unsigned long` is 64-bit on
// both sides): params structs hold these, made on the host.
#pragma once

namespace mps_ops {

struct fast_divisor {
  unsigned divisor;
  unsigned multiplier;
  unsigned shift;
};

// Host side, for a divisor of 1 or more.
inline fast_divisor make_fast_divisor(unsigned divisor) {
  unsigned shift = 0;
  while (shift < 32 && (1ul << shift) < divisor) {
    ++shift;
  }
  const unsigned long multiplier = (1ul << 32) * ((1ul << shift) - divisor) / divisor + 1;
  return fast_divisor{divisor, static_cast<unsigned>(multiplier), shift};
}

inline unsigned quotient(unsigned n, fast_divisor d) {
  const unsigned long t = (static_cast<unsigned long>(n) * d.multiplier) >> 32;
  return static_cast<unsigned>((t + n) >> d.shift);
}

inline unsigned remainder_of(unsigned n, unsigned q, fast_divisor d) {
  return n - q * d.divisor;
}

}  // namespace mps_ops
