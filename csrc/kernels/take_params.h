// Parameters shared by take.metal and its host stub
// (csrc/operations/take.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

#include "include/mps_ops/shape_limits.h"

namespace mps_ops {

// take's indices per thread (per_element.h's tiles): several gathers in
// flight per thread, whose addresses are random (one each left the memory
// system waiting: 0.95x torch's CUDA take on an H200, which takes 4 too).
enum { take_per_thread = 4 };

// take / put_: self indexed as if flattened, through its sizes and byte
// strides (row-major decomposition). put_: `count` (target, source position)
// pairs sorted by target; whether the writes accumulate.
struct put_params {
  long sizes[max_ndim];
  long strides[max_ndim];
  long count;
  int ndim;
  int accumulate;
  int narrow;  // self has fewer than 2**32 elements: 32-bit coordinates
};

}  // namespace mps_ops
