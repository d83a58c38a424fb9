// Parameters shared by adaptive_pool3d.metal and its host stub
// (csrc/operations/adaptive_pool3d.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

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
};

}  // namespace mps_ops
