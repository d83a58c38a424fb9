// Parameter structs shared by kernels and their host stubs: one definition,
// one layout. Plain C++ that both MSL and the host compiler accept (no
// address spaces, no Metal types; `long` is 64-bit on both sides).
#pragma once

namespace mps_ops {

// _add_relu: alpha as float for float tensors, as integer for integer ones.
struct add_relu_params {
  float alpha;
  long integer_alpha;
};

}  // namespace mps_ops
