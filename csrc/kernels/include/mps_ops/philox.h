// Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011): a counter-based generator. A 128-bit counter is
// enciphered under a 64-bit key in ten rounds, each two 32x32 -> 64-bit
// products and xors, giving four random 32-bit words; any thread draws its
// own counters' words without a shared state, reproducibly for one key.
#pragma once
#include <metal_stdlib>
#include <mps_ops/half_turns.h>

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

// A word as a float uniform on (0, 1), both ends excluded: the midpoint of
// its top 23 bits' cell, (m + 1/2) 2**-23, exact in float (24 bits), from
// 2**-24 to 1 - 2**-24. Samplers that take a logarithm or divide by one
// need both: an exact 0 (unit_float's, once in 2**24) makes log -inf, and
// a midpoint of 24-bit cells rounds to 1 at the top cell.
inline float open_unit_float(uint word) {
  return (float(word >> 9) + 0.5f) * 1.1920928955078125e-07f;  // 2**-23
}

// The cipher under the four words the host drew from the generator
// (philox_key in csrc/runtime/kernel_inputs.h): words 0 and 1 key it, words 2
// and 3 are the counter's upper half, so each call's counters are its own.
// A kernel picks the lower half (c0, c1) per block.
struct philox_cipher {
  uint k0, k1, c2, c3;

  philox_block block(uint c0, uint c1) const { return philox4x32(c0, c1, c2, c3, k0, k1); }
};

inline philox_cipher read_cipher(constant int* key) {
  return philox_cipher{uint(key[0]), uint(key[1]), uint(key[2]), uint(key[3])};
}

// One element's stream of open uniforms: blocks at counters (element,
// draw / 4), four uniforms per block.
struct uniform_stream {
  uint element;
  uint draws;
  philox_cipher cipher;
  philox_block block;

  float next() {
    const uint m = draws & 3u;
    if (m == 0) {
      block = cipher.block(element, draws >> 2);
    }
    ++draws;
    // Selected, not indexed: a word indexed at run time puts the block in
    // local memory (ptxas: a 48-byte stack frame in every sampler kernel).
    const uint word = m == 0 ? block.word[0] : m == 1 ? block.word[1] : m == 2 ? block.word[2] : block.word[3];
    return open_unit_float(word);
  }
};

inline uniform_stream open_uniform_stream(uint element, constant int* key) {
  return uniform_stream{element, 0u, read_cipher(key), {}};
}

// For a sampler's functions that take a stream (or a state holding one) by
// reference: always inlined, as Apple's own METAL_FUNC is. Called out of
// line, the stream went through local memory (ptxas: a 40 to 56-byte stack
// frame in every poisson, binomial and Gamma kernel).
#define MPS_OPS_STREAM_SAMPLER inline __attribute__((__always_inline__))

// Two independent standard normals from two open uniforms (Box and Muller):
// radius sqrt(-2 log u1) at angle 2 pi u2, as cosine and sine, both from
// one exact reduction of 2 u2 half turns (mps_ops/half_turns.h).
struct normal_pair {
  float first, second;
};

inline normal_pair box_muller(float u1, float u2) {
  const float radius = metal::sqrt(-2.0f * metal::log(u1));
  const sin_cos angle = sin_cos_half_turns(2.0f * u2);
  return normal_pair{radius * angle.cos, radius * angle.sin};
}

// The same pair with its angle pi (2 u2 - 1) in (-pi, pi) through the fast
// sine and cosine, for draws rounded to half or bfloat. An absolute angle
// error e moves a normal by at most |N| e, |N| < 6 (the radius's largest is
// sqrt(50 ln 2)): with CUDA's sin.approx (e = 2**-20.5) under 2**-18, far
// under half's and bfloat's rounding (2**-11 and 2**-8); Apple's fast sin
// and cos are unmeasured here. On the CUDA target one instruction each,
// against some 15 for the exact reduction and two polynomials. 2 u2 - 1 is
// exact (u2 is an odd multiple of 2**-24).
inline normal_pair box_muller_fast_angle(float u1, float u2) {
  const float radius = metal::sqrt(-2.0f * metal::log(u1));
  const float angle = 3.14159265358979f * (2.0f * u2 - 1.0f);
  return normal_pair{radius * metal::fast::cos(angle), radius * metal::fast::sin(angle)};
}

}  // namespace mps_ops
