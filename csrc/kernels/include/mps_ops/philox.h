// Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011): a counter-based generator. A 128-bit counter is
// enciphered under a 64-bit key in ten rounds, each two 32x32 -> 64-bit
// products and xors, giving four random 32-bit words; any thread draws its
// own counters' words without a shared state, reproducibly for one key.
#pragma once
#include <metal_stdlib>

namespace mps_ops {

struct philox_block {
  uint word[4];
};

inline philox_block philox4x32(uint c0, uint c1, uint c2, uint c3, uint k0, uint k1) {
  for (int round = 0; round < 10; ++round) {
    const uint hi0 = metal::mulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const uint hi1 = metal::mulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;  // the key schedule: Weyl sequences
    k1 += 0xBB67AE85u;
  }
  return philox_block{{c0, c1, c2, c3}};
}

// A word as a float uniform on [0, 1): its top 24 bits.
inline float unit_float(uint word) {
  return float(word >> 8) * 5.9604644775390625e-08f;  // 2**-24
}

}  // namespace mps_ops
