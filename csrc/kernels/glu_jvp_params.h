// Parameters shared by glu_jvp.metal and its host stub
// (csrc/operations/glu_jvp.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

namespace mps_ops {

// Elements per thread, whatever the dtype: 4 operands of 8 halves each held
// at once took 64 registers (H100: half the threads resident).
enum { glu_elements_per_thread = 4 };

// glu_jvp / glu_backward_jvp: the half shape (ndim dims, innermost last) and
// each operand's strides in elements, [operand][dim]. 8 x 8 keeps it within
// what one setBytes carries here (1 KiB).
enum { glu_max_operands = 8, glu_max_dims = 8 };
// narrow: every operand's last element lies below 2**31 elements from its
// first, so the kernels add offsets in 32 bits.
struct glu_geometry {
  long sizes[glu_max_dims];
  long strides[glu_max_operands][glu_max_dims];
  int ndim;
  int narrow;
};

}  // namespace mps_ops
