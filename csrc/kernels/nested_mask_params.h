// Parameters shared by nested_mask.metal and its host stub
// (csrc/operations/nested_mask.mm): one definition, one layout. Plain C++
// that MSL and the host compiler both accept.
#pragma once

namespace mps_ops {

// A 2-D boolean mask's strides, in elements.
struct mask_rows_params {
  long row_stride;
  long column_stride;
};

}  // namespace mps_ops
