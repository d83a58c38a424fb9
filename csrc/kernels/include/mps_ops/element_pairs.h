// mps_ops/element_pairs.h -- how a kernel's thread loads, keeps and stores
// the elements of contiguous data: one per load (single_elements), or, for
// half and bfloat, two per 32-bit load and store (element_pairs), half the
// load and store instructions for the same bytes, on Apple GPUs as on
// NVIDIA's. The host takes a paired kernel only where the data allows it:
// an even number of elements per row and 4-byte aligned operands.
//   stored  what one load reads and one store writes
//   word    what a thread keeps of it (a float, or both elements' bits)
//   element(w, j)  the word's j-th element (j < width()) as a float
#pragma once

#include <metal_stdlib>

namespace mps_ops {

template <typename T>
struct single_elements {
  using stored = T;
  using word = float;
  static constexpr uint width() { return 1; }
  static word load(stored x) { return float(x); }
  static float element(word w, uint) { return w; }
  static word padding() { return -metal::numeric_limits<float>::infinity(); }
  static stored store(thread const float* values) { return static_cast<T>(values[0]); }
};

template <typename T>
struct element_pairs {
  // Both elements' bits in one word, the first in the low half.
  using stored = uint;
  using word = uint;
  static constexpr uint width() { return 2; }
  static word load(stored x) { return x; }
  static float element(word w, uint j) { return float(metal::as_type<T>(ushort(j == 0 ? w : w >> 16))); }
  // Two -inf: past a row's end, terms that vanish below a finite max.
  static word padding() {
    return pair(-metal::numeric_limits<float>::infinity(), -metal::numeric_limits<float>::infinity());
  }
  static stored store(thread const float* values) { return pair(values[0], values[1]); }
  // One vector conversion: a GPU may convert both in one instruction.
  static word pair(float a, float b) { return metal::as_type<uint>(metal::vec<T, 2>(float2(a, b))); }
};

}  // namespace mps_ops
