// Parameters shared by adaptive_pool3d.metal and its host stub
// (csrc/operations/adaptive_pool3d.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

#include "include/mps_ops/fast_divisor.h"

namespace mps_ops {

// Adaptive 3-D pooling: the (N, C, D, H, W) input and (N, C, OD, OH, OW)
// output (a 4-D tensor has N = 1), strides in elements; index_strides are
// those of the max pool's indices tensor.
struct pool3d_geometry {
  long in_sizes[5];
  long in_strides[5];
  long out_sizes[5];
  long out_strides[5];
  long index_strides[5];
  // adaptive_max_pool3d_backward's divisions, made on the host
  // (fast_divisor.h): by the input's D, H, W and the output's OD, OH, OW
  // (cell bounds: the narrow kernel only, whose numerators the host found
  // below 2**32), by C and by the runs along W (thread coordinates).
  fast_divisor by_in[3];
  fast_divisor by_out[3];
  fast_divisor by_channels, by_runs;
};

}  // namespace mps_ops
