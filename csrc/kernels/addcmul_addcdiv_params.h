// Parameters shared by addcmul_addcdiv.metal and its host stub
// (csrc/operations/addcmul_addcdiv.mm): one definition, one layout. Plain C++
// that MSL and the host compiler both accept (no address spaces, no Metal
// types; `long` is 64-bit on both sides).
#pragma once

namespace mps_ops {

// `value` as the CPU's kernels take it: a float for the floating dtypes
// (half and bfloat16 compute in float), an integer for the integral ones
// (already checked to fit the dtype on the host, as Scalar::to does).
struct pointwise_value_params {
  float real;
  long integer;
};

}  // namespace mps_ops
