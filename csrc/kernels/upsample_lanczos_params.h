// Parameters shared by upsample_lanczos.metal and its host stub
// (csrc/operations/upsample_lanczos.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

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

// _upsample_lanczos2d_aa_backward: a contiguous (N, C, H, W) grad_input
// gathered from the (N, C, OH, OW) grad_output through both axes' weights.
struct lanczos_backward_params {
  long channels;
  long height;
  long width;
  long out_height;
  long out_width;
  long grad_output_strides[4];
  int taps_h;
  int taps_w;
};

}  // namespace mps_ops
