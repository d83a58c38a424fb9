// Parameters shared by add_relu.metal and its host stub
// (csrc/operations/add_relu.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

namespace mps_ops {

// _add_relu: alpha and the upper clamp (the largest value of self's dtype,
// as the CPU clamps) in the computing dtype: the float pair for float
// tensors, the integer pair for integer ones.
struct add_relu_params {
  float alpha;
  float upper;
  long integer_alpha;
  long integer_upper;
};

}  // namespace mps_ops
