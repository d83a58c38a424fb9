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
struct layer_norm_backward_params {
  long rows;
  long columns;
  long rows_per_chunk;
  long chunks;
  int weighted;
};

}  // namespace mps_ops
