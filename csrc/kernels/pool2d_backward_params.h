// Parameters shared by pool2d_backward.metal and its host stub
// (csrc/operations/pool2d_backward.mm): one definition, one layout. Plain C++
// that MSL and the host compiler both accept (no address spaces, no Metal
// types; `long` is 64-bit on both sides).
#pragma once

#include "include/mps_ops/fast_divisor.h"

namespace mps_ops {

// The backward of 2-D max and average pooling: grad_input (N, C, H, W)
// gathers from the grad_output (N, C, OH, OW) cells whose windows cover each
// element (a 3-D input has N = 1). Index [0] of the window arrays is along H,
// [1] along W; strides are in elements.
struct pool2d_backward_geometry {
  unsigned batch, channels, height, width;
  unsigned out_height, out_width;
  int kernel_size[2], stride[2], padding[2], dilation[2];
  // 32-bit: the host sends pieces whose every offset fits (docs/design.md).
  unsigned in_strides[4];     // grad_input's
  unsigned out_strides[4];    // grad_output's
  unsigned index_strides[4];  // the max pool's indices
  // Average pooling's divisor: divisor_override where it is not 0, else the
  // window's size (count_include_pad: padding counted) or its element count.
  long divisor_override;
  int count_include_pad;
  // Threads take grad_input's elements in its memory order: channels fastest
  // (channels-last) or width fastest, so neighbouring threads write
  // neighbouring elements.
  int channels_last;
  // The kernels' divisions, made on the host (fast_divisor.h): by the
  // sizes, the strides, and the runs of elements along the fastest axis
  // (its length in threads) that max pooling's threads take.
  fast_divisor by_channels, by_height, by_width, by_stride[2], by_runs;
};

}  // namespace mps_ops
