// Parameters shared by fractional_max_pool.metal and its host stub
// (csrc/operations/fractional_max_pool.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

#include "include/mps_ops/fast_divisor.h"

namespace mps_ops {

// fractional_max_pool2d/3d (+ backward): planes of (depth, height, width)
// (depth 1 for 2-D) pooled by (pool_t, pool_h, pool_w) windows into
// (out_t, out_h, out_w); input strides in elements (batch, channel, t, h, w);
// output, indices and samples contiguous, `sample_count` samples per plane
// (2-D: width, height; 3-D: time, height, width).
struct fractional_pool_params {
  long batch;
  long channels;
  long depth;
  long height;
  long width;
  long out_t;
  long out_h;
  long out_w;
  long pool_t;
  long pool_h;
  long pool_w;
  long in_strides[5];
  // (I - P) / (O - 1) per axis (time, height, width), computed by the host in
  // the input's type as the CPU does (float holds every half and bfloat16).
  float alpha[3];
  int sample_count;
  // The forward's thread index taken apart by the output's sizes and the
  // channels without a divide instruction (fast_divisor.h; the host allows
  // no more than 2**32 - 1 outputs).
  fast_divisor by_out_w, by_out_h, by_out_t, by_channels;
};

}  // namespace mps_ops
