// Parameters shared by addmm_activation.metal and its host stub
// (csrc/operations/addmm_activation.mm): one definition, one layout. Plain
// C++ that MSL and the host compiler both accept (`long` is 64-bit on both
// sides).
#pragma once

namespace mps_ops {

// The float epilogue: beta and alpha as float (a zero one drops its term,
// NaN and all, as BLAS does for the CPU); use_gelu picks GELU (erf form)
// over ReLU.
struct addmm_activation_params {
  float beta;
  float alpha;
  bool use_gelu;
};

// The integer kernel (the whole op in one pass): sizes, and strides in
// elements (self's are 0 along the dims it broadcasts over).
struct addmm_integer_params {
  long inner;  // mat1's columns, mat2's rows
  long columns;
  long self_row_stride;
  long self_column_stride;
  long mat1_row_stride;
  long mat1_column_stride;
  long mat2_row_stride;
  long mat2_column_stride;
  long beta;   // converted to the integer dtype as the CPU converts them
  long alpha;  // (truncated)
};

}  // namespace mps_ops
