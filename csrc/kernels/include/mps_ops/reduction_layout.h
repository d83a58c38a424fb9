// What every threadgroup reduction binds besides its operands (the kernel
// side in reduction.h, the host side in csrc/runtime/reduction.h): one
// definition, one layout. Plain C++ that MSL and the host compiler both accept
// (no address spaces, no Metal types; `long` is 64-bit on both sides).
#pragma once

#include "shape_limits.h"

namespace mps_ops {

// Where the elements reduced into each output lie (csrc/runtime/reduction.h
// builds it). Both dimension lists run innermost first, strides in elements
// of the input. Output slice s starts at the offset its index decomposes to
// over the outer dims; its elements are the inner dims' positions from there.
struct reduction_layout {
  long outer_sizes[max_ndim];
  long outer_strides[max_ndim];
  long inner_sizes[max_ndim];
  long inner_strides[max_ndim];
  int outer_ndim;
  int inner_ndim;
  long inner_numel;
};

}  // namespace mps_ops
