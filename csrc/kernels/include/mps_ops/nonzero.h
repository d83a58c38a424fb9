// Whether a value is nonzero, as the CPU's is_nonzero and nonzero decide it:
// integers and bool compared with zero; floating types by their bits less
// the sign's, so -0.0 is zero, NaN is not, and a subnormal is not where a
// GPU flushes it to zero in a comparison. (Complex values: their two parts,
// read as floats, by the kernels.)
#pragma once
#include <metal_stdlib>

namespace mps_ops {

template <typename T>
inline bool is_nonzero(T value) {
  return value != T(0);
}
inline bool is_nonzero(float value) {
  return (metal::as_type<uint>(value) & 0x7fffffffu) != 0u;
}
inline bool is_nonzero(half value) {
  return (metal::as_type<ushort>(value) & ushort(0x7fff)) != ushort(0);
}
inline bool is_nonzero(bfloat value) {
  return (metal::as_type<ushort>(value) & ushort(0x7fff)) != ushort(0);
}

}  // namespace mps_ops
