// Parameters shared by nonzero_static.metal and its host stub
// (csrc/operations/nonzero_static.mm): one definition, one layout. Plain C++
// that MSL and the host compiler both accept (`long` is 64-bit on both
// sides).
#pragma once

#include "include/mps_ops/fast_divisor.h"

namespace mps_ops {

// Elements each thread of the count and write kernels takes, a
// threadgroup's width apart: a threadgroup of `width` threads takes a block
// of width x this many. Blocks of thousands of elements keep the
// one-threadgroup scan over them short. (H200: 4 consecutive elements per
// thread, 65,536 blocks of a 256 MB input, took 0.44x torch's CUDA kernel
// with 64-bit divisions in the fill and the coordinates; 16 consecutive
// ones, their loads 64 bytes apart across a SIMD group, 0.35x.)
enum { nonzero_static_per_thread = 16 };
// Rows each fill thread takes: most calls fill few rows or none, and a
// thread per row cost a launch of as many threads for nothing (H200: 43 us
// for 16 M rows).
enum { nonzero_static_fill_rows = 16 };
// Blocks' counts each scan thread takes, consecutive: its loads issue
// together, and a 256 MB input's 16,384 blocks take one pass of 1,024
// threads (H200: a count a thread, 16 passes of a load, three barriers and
// one thread's serial sum over the SIMD groups, took 41 us of the op's 480).
enum { nonzero_static_scan_per_thread = 16 };

// The most dims of an input (a coordinate per dim per row; its sizes ride
// in the params, and KernelFunction holds a dispatch's inline arguments in
// 1 KiB).
enum { nonzero_static_max_dims = 32 };

// A contiguous input of `numel` elements (each `parts` values: 2 for
// complex, read as float pairs) of shape sizes[0, ndim), in `blocks`
// blocks; the output (rows, ndim) int64, rows past the nonzero elements
// filled with fill_value.
// by_size: each dim's size as a 32-bit divisor, where the input has under
// 2**32 elements (`narrow`); else the kernels divide in 64 bits.
struct nonzero_static_params {
  unsigned long numel;
  unsigned long blocks;
  unsigned long rows;
  long fill_value;
  long sizes[nonzero_static_max_dims];
  fast_divisor by_size[nonzero_static_max_dims];
  int ndim;
  int parts;
  int narrow;
};

}  // namespace mps_ops
