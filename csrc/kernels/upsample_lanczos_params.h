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
// gathered from the (N, C, OH, OW) grad_output through both axes' weights
// (under 2**32 elements: the host checks). by_width, by_height and
// by_channels divide an element's index into its column, row, channel and
// sample.
struct lanczos_backward_params {
  long channels;
  long height;
  long width;
  long out_height;
  long out_width;
  long grad_output_strides[4];
  int taps_h;
  int taps_w;
  fast_divisor by_width;
  fast_divisor by_height;
  fast_divisor by_channels;
};

// The output columns covering an input column that the backward holds in
// registers (more: it reads them from the tables for every output row).
// Downsampling by any factor covers an input with about the filter's width
// of outputs (2 bilinear, 4 bicubic, 6 Lanczos, plus one); upsampling by s
// with s times as many.
enum { aa_held_columns = 8 };

}  // namespace mps_ops
