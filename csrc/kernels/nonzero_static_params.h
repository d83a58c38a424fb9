// Parameters shared by nonzero_static.metal and its host stub
// (csrc/operations/nonzero_static.mm): one definition, one layout. Plain C++
// that MSL and the host compiler both accept (`long` is 64-bit on both
// sides).
#pragma once

namespace mps_ops {

// Elements each thread of the count and write kernels takes, consecutive:
// a threadgroup of `width` threads takes a block of width x this many.
enum { nonzero_static_per_thread = 4 };
// The most dims of an input (a coordinate per dim per row).
enum { nonzero_static_max_dims = 64 };

// A contiguous input of `numel` elements (each `parts` values: 2 for
// complex, read as float pairs) of shape sizes[0, ndim), in `blocks`
// blocks; the output (rows, ndim) int64, rows past the nonzero elements
// filled with fill_value.
struct nonzero_static_params {
  unsigned long numel;
  unsigned long blocks;
  unsigned long rows;
  long fill_value;
  long sizes[nonzero_static_max_dims];
  int ndim;
  int parts;
};

}  // namespace mps_ops
