// Parameters shared by take.metal and its host stub
// (csrc/operations/take.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

#include "include/mps_ops/shape_limits.h"

namespace mps_ops {

// take's indices per thread (per_element.h's tiles): several gathers in
// flight per thread, whose addresses are random (one each left the memory
// system waiting: 0.95x torch's CUDA take on an H200, which takes 4 too).
enum { take_per_thread = 4 };

// put_ through bins (take.mm's binned_put): the most threads of a
// threadgroup of put_bin_count and put_bin_scatter, the indices each thread
// takes, and the most bins (two per thread: put_bin_scatter's running sum).
// put_bin_scatter stages a group's entries in threadgroup memory: 8 KiB of
// positions and up to 16 KiB of values, inside Apple GPUs' 32 KiB.
enum { put_bin_group_threads = 256, put_bin_per_thread = 8, put_bins_max = 2 * put_bin_group_threads };

// put_bin_count's and put_bin_scatter's: counts (and their running sums)
// are [bins][groups] matrices of uint, so that one running sum over the
// matrix gives each threadgroup's first slot in each bin.
struct put_bin_params {
  long numel;     // self's elements: indices lie in [-numel, numel)
  int count;      // indices (at most 2**31 - 1)
  int groups;     // threadgroups
  int bins;       // at most put_bins_max
  int bin_shift;  // a flat position's bin: flat >> bin_shift
};

// take / put_: self indexed as if flattened, through its sizes and byte
// strides (row-major decomposition). put_: `count` (target, source position)
// pairs sorted by target; whether the writes accumulate.
struct put_params {
  long sizes[max_ndim];
  long strides[max_ndim];
  long count;
  int ndim;
  int accumulate;
  int narrow;  // self has fewer than 2**32 elements: 32-bit coordinates
};

}  // namespace mps_ops
