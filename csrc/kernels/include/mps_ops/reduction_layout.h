// What every threadgroup reduction binds besides its operands (the kernel
// side in reduction.h, the host side in csrc/runtime/reduction.h): one
// definition, one layout. Plain C++ that MSL and the host compiler both accept
// (no address spaces, no Metal types; `long` is 64-bit on both sides).
#pragma once

#include "shape_limits.h"

namespace mps_ops {

// The most threads of a column-mapped threadgroup: its rows after the first
// leave their states in threadgroup memory, (rows - 1) * columns of them, so
// this bounds that array (256 of the largest state, 24 bytes, is 6 KiB).
enum { max_column_group = 256 };

// Slices split over several threadgroups (chunk_shift below): each group
// leaves its chunk's reducer state in a scratch buffer the host allocates at
// this many bytes per state (the kernels check their state fits), and a
// second pass merges each slice's chunk states.
enum { max_chunk_state_bytes = 32 };

// Where the elements reduced into each output lie (csrc/runtime/reduction.h
// builds it). Both dimension lists run innermost first, strides in elements
// of the input. Output slice s starts at the offset its index decomposes to
// over the outer dims; its elements are the inner dims' positions from there.
struct reduction_layout {
  long outer_sizes[max_ndim];
  long outer_strides[max_ndim];
  long inner_sizes[max_ndim];
  long inner_strides[max_ndim];
  long inner_numel;
  unsigned char outer_ndim;
  unsigned char inner_ndim;
  // 1 where every element offset is below 2**31: the kernel then adds them
  // in 32 bits.
  unsigned char narrow_offsets;
  // 0: each slice is reduced whole by the threads the mapping gives it.
  // Otherwise the slice is split into chunks of 2**chunk_shift elements
  // (the last one shorter), chunk c reduced by the groups at grid z = c,
  // which store their states for reduction.h's merge pass (reduce_*_merge).
  unsigned char chunk_shift;
  // How threads meet slices (reduction.cpp's choose_mapping picks it):
  //   columns == 0, rows: threads_per_slice consecutive threads (a multiple of
  //     the SIMD width, or the whole group) share a slice, group_size /
  //     threads_per_slice slices per group;
  //   columns > 0, columns: `columns` neighbouring slices per group, one per
  //     thread index % columns (neighbouring outputs, so loads coalesce where
  //     the reduced dim is not the innermost), threads_per_slice rows of
  //     threads (index / columns) dealing out each slice's elements.
  // Threads mapped past the last slice (the product of outer_sizes) fold
  // nothing. Small fields: the layout is bound with every dispatch, and these
  // fit where the dim counts' ints were.
  unsigned short columns;
  unsigned short threads_per_slice;
};

}  // namespace mps_ops
