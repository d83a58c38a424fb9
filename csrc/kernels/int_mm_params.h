// Parameters shared by int_mm.metal and its host stub
// (csrc/operations/int_mm.mm): one definition, one layout. Plain C++ that
// MSL and the host compiler both accept.
#pragma once

namespace mps_ops {

// out [rows, columns] = a [rows, inner] @ b [inner, columns], each
// contiguous (the host copies a strided input).
struct int_mm_params {
  unsigned rows, inner, columns;
};

// A threadgroup's tile: int_mm_tile x int_mm_tile outputs, int_mm_side x
// int_mm_side threads of (int_mm_tile / int_mm_side)**2 outputs each, the
// inner dim taken int_mm_depth at a time through threadgroup memory. (An
// enum: MSL has no program-scope constexpr outside the constant address
// space.)
enum { int_mm_tile = 64, int_mm_side = 16, int_mm_depth = 32 };

}  // namespace mps_ops
