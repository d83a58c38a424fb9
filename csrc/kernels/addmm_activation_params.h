// Parameters shared by addmm_activation.metal and its host stub
// (csrc/operations/addmm_activation.mm): one definition, one layout. Plain
// C++ that MSL and the host compiler both accept (`long` is 64-bit on both
// sides).
#pragma once

namespace mps_ops {

// beta and alpha converted as the CPU converts them for the computing dtype:
// the float pair for floating tensors, the integer pair (truncated) for
// integer ones. A zero coefficient drops its term (NaN and all), as BLAS
// does for the CPU; use_gelu picks GELU (erf form) over ReLU.
struct addmm_activation_params {
  float beta;
  float alpha;
  long integer_beta;
  long integer_alpha;
  bool use_gelu;
};

}  // namespace mps_ops
