// Parameters shared by upsample_lanczos.metal and its host stub
// (csrc/operations/upsample_lanczos.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

#include "include/mps_ops/fast_divisor.h"

namespace mps_ops {

// _upsample_lanczos2d_aa: one separable pass resamples dim `axis` (2: H,
// 3: W) of an (N, C, H, W) input into `sizes`; each output index along the
// axis reads `taps` weights (fixed-point with `precision` fraction bits for
// uint8). Strides in elements.
struct lanczos_pass_params {
  long sizes[4];
  long in_strides[4];
  long out_strides[4];
  int axis;
  int taps;
  int precision;
};

// The antialiased resizes' backward: a contiguous (N, C, H, W) grad_input
// (`planes` = N x C planes) gathered from the (N, C, OH, OW) grad_output
// through both axes' covering tables (per input row or column: first
// covering output index, their count, and their weights, rows_stride or
// columns_stride per index), under 2**32 elements (the host checks).
// by_width and by_height divide a thread's index into its column, row and
// block of planes; by_channels a plane into its sample and channel.
struct lanczos_backward_params {
  long height;
  long width;
  long grad_output_strides[4];
  int rows_stride;
  int columns_stride;
  unsigned planes;
  fast_divisor by_width;
  fast_divisor by_height;
  fast_divisor by_channels;
};

// The planes one backward thread takes at the same position: the tables'
// lookups, which do not depend on the plane, are paid once for them.
enum { aa_planes_per_thread = 4 };

}  // namespace mps_ops
