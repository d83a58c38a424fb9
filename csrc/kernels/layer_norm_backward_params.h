// Parameters shared by layer_norm_backward.metal and its host stub
// (csrc/operations/layer_norm_backward.mm): one definition, one layout. Plain
// C++ that MSL and the host compiler both accept (`long` is 64-bit on both
// sides).
#pragma once

namespace mps_ops {

// The input as `rows` rows of `columns` (the normalized shape's numel),
// contiguous; weighted: a weight (gamma) was given, else every gamma is 1.
// The weight and bias gradients' first pass gives each of `chunks` groups of
// rows `rows_per_chunk` consecutive rows.
// The weight and bias gradients' second pass: groups of merge_columns
// neighbouring columns x merge_slices threads per column (the host's grid
// covers the columns in whole groups).
enum { layer_norm_merge_columns = 32, layer_norm_merge_slices = 8, layer_norm_merge_group = 32 * 8 };

struct layer_norm_backward_params {
  long rows;
  long columns;
  long rows_per_chunk;
  long chunks;
  int weighted;
};

}  // namespace mps_ops
