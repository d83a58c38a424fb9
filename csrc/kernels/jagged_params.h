// Parameters shared by jagged.metal and its host stub
// (csrc/operations/jagged.mm): one definition, one layout. Plain C++ that
// MSL and the host compiler both accept.
#pragma once
#include "include/mps_ops/fast_divisor.h"

namespace mps_ops {

// Elements of a row each thread moves, row_threads apart (a SIMD group's
// loads and stores contiguous for each): the thread's start (its place,
// the item's offsets and their checks) is shared by them.
enum { jagged_per_thread = 8 };

// The padded side is [batches, rows_per_batch, inner], the jagged side
// [jagged_rows, inner]; batch b's rows are jagged rows [offsets[b],
// offsets[b + 1]). x: a thread of the row (of row_threads, each taking
// jagged_per_thread of its `inner` elements), y: the padded row (batch *
// rows_per_batch + row).
struct jagged_params {
  unsigned long inner;
  unsigned long row_threads;
  unsigned long jagged_rows;  // values.size(0), or total_L
  unsigned long padding;      // to padded: the padding value's bits (the low ones)
  // The padded rows a batch item as a fast_divisor (a padded row's item),
  // its fields flat: MSL copies a struct out of the constant address space
  // whole only where its members are plain values.
  unsigned rows, rows_multiplier, rows_shift;

  fast_divisor by_rows() const { return fast_divisor{rows, rows_multiplier, rows_shift}; }
};

}  // namespace mps_ops
