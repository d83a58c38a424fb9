// Parameters shared by grid_sampler.metal and its host stub
// (csrc/operations/grid_sampler.mm): one definition, one layout. Plain C++
// that MSL and the host compiler both accept (`long` is 64-bit on both sides).
#pragma once

namespace mps_ops {

// torch's GridSamplerInterpolation and GridSamplerPadding values.
enum { grid_bilinear = 0, grid_nearest = 1, grid_bicubic = 2 };
enum { grid_pad_zeros = 0, grid_pad_border = 1, grid_pad_reflection = 2 };

// input (batch, channels, in_h, in_w) and grid (batch, out_h, out_w, 2),
// grad_output (batch, channels, out_h, out_w), all contiguous. Flags are 0
// or 1. (The interpolation picks the kernel.)
struct grid_sampler_params {
  long batch;
  long channels;
  long in_h;
  long in_w;
  long out_h;
  long out_w;
  int padding;
  int align_corners;
  int want_input;  // grad_input asked for
};

// The same for 3-D: input (batch, channels, in_d, in_h, in_w), grid
// (batch, out_d, out_h, out_w, 3), grad_output (batch, channels, out_d,
// out_h, out_w), all contiguous (no bicubic in 3-D).
struct grid_sampler_3d_params {
  long batch;
  long channels;
  long in_d;
  long in_h;
  long in_w;
  long out_d;
  long out_h;
  long out_w;
  int padding;
  int align_corners;
  int want_input;
};

}  // namespace mps_ops
