// bfloat for the emulator and the CUDA target: 16-bit storage, arithmetic in
// float, every result rounded back to nearest-even as Apple GPUs store it. A class (not a typedef of
// a wider type) so that the storage size, the rounding and the overload set
// match MSL; it lives in its own namespace so that `cond ? bf : 0.0f` style
// ambiguities stay visible instead of silently picking float.
#pragma once

#include <stdint.h>
#include <string.h>

namespace mps_ops_emu {

class bfloat {
 public:
  bfloat() = default;
  bfloat(float value) : bits_(round_to_bits(value)) {}
  template <class T, class = decltype(static_cast<float>(T()))>
  explicit bfloat(T value) : bits_(round_to_bits(static_cast<float>(value))) {}

  operator float() const {
    uint32_t wide = uint32_t(bits_) << 16;
    float value;
    memcpy(&value, &wide, sizeof(value));
    return value;
  }

  uint16_t bits() const { return bits_; }
  static bfloat from_bits(uint16_t bits) {
    bfloat value;
    value.bits_ = bits;
    return value;
  }

  bfloat& operator+=(bfloat o) { return *this = bfloat(float(*this) + float(o)); }
  bfloat& operator-=(bfloat o) { return *this = bfloat(float(*this) - float(o)); }
  bfloat& operator*=(bfloat o) { return *this = bfloat(float(*this) * float(o)); }
  bfloat& operator/=(bfloat o) { return *this = bfloat(float(*this) / float(o)); }
  bfloat operator-() const { return from_bits(bits_ ^ 0x8000u); }
  bfloat operator+() const { return *this; }

 private:
  static uint16_t round_to_bits(float value) {
#if defined(__CUDA__) && defined(__CUDA_ARCH__)
    // The CUDA target: the GPU's own conversion, the same rounding (to
    // nearest even) in one instruction where the bit arithmetic below took
    // about six; a NaN stays NaN, its payload not kept.
    const __bf16 rounded = __nvvm_f2bf16_rn(value);
    uint16_t bits;
    memcpy(&bits, &rounded, sizeof(bits));
    return bits;
#else
    uint32_t wide;
    memcpy(&wide, &value, sizeof(wide));
    if ((wide & 0x7fffffffu) > 0x7f800000u) {
      // Keep NaNs NaN (and quiet) instead of letting rounding carry them to inf.
      return uint16_t((wide >> 16) | 0x0040u);
    }
    uint32_t rounding_bias = 0x7fffu + ((wide >> 16) & 1u);
    return uint16_t((wide + rounding_bias) >> 16);
#endif
  }

  uint16_t bits_;
};

inline bfloat operator+(bfloat a, bfloat b) { return bfloat(float(a) + float(b)); }
inline bfloat operator-(bfloat a, bfloat b) { return bfloat(float(a) - float(b)); }
inline bfloat operator*(bfloat a, bfloat b) { return bfloat(float(a) * float(b)); }
inline bfloat operator/(bfloat a, bfloat b) { return bfloat(float(a) / float(b)); }
inline bool operator==(bfloat a, bfloat b) { return float(a) == float(b); }
inline bool operator!=(bfloat a, bfloat b) { return float(a) != float(b); }
inline bool operator<(bfloat a, bfloat b) { return float(a) < float(b); }
inline bool operator>(bfloat a, bfloat b) { return float(a) > float(b); }
inline bool operator<=(bfloat a, bfloat b) { return float(a) <= float(b); }
inline bool operator>=(bfloat a, bfloat b) { return float(a) >= float(b); }

}  // namespace mps_ops_emu
