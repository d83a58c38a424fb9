// Parameters shared by embedding_renorm.metal and its host stub
// (csrc/operations/embedding_renorm.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

namespace mps_ops {

// embedding_renorm_: rows of `dim` elements, rows_total of them; strides in
// elements; renorm rows whose norm_type-norm exceeds max_norm.
struct embedding_renorm_params {
  float max_norm;
  float norm_type;
  long rows_total;
  long dim;
  long row_stride;
  long column_stride;
  long count;  // indices
  unsigned share;  // threads per index (row_threads), several indices per group
};

}  // namespace mps_ops
