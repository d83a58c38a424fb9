// Parameters shared by index_reduce.metal and its host stub
// (csrc/operations/index_reduce.mm): one definition, one layout. Plain C++
// that MSL and the host compiler both accept (`long` is 64-bit on both).
#pragma once

#include "include/mps_ops/shape_limits.h"

namespace mps_ops {

// The reductions, in the order the host names them.
enum { index_reduce_prod = 0, index_reduce_mean = 1, index_reduce_amax = 2, index_reduce_amin = 3 };

// The result (self's shape, at least 1-D, fewer than 2**32 elements: its
// coordinates divide in 32 bits) through its sizes and element strides; the source through its element strides (its sizes are the
// result's but along dim, where it has `count` slices). keys: count sorted
// values index * count + position.
struct index_reduce_params {
  long sizes[max_ndim];
  long result_strides[max_ndim];
  long source_strides[max_ndim];
  long count;
  long numel;  // the result's elements
  int ndim;
  int dim;
  int reduce;
  int include_self;
};

}  // namespace mps_ops
