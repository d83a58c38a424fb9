// mps_ops/row_walk.h -- a thread's row in the row-wise kernels (softmax and
// its backwards, masked or not): operands contiguous and of one shape, one
// dim reduced (SliceMapping::rows on the host), so one reduction layout
// addresses every operand and the reduced dim has at most one inner stride.
#pragma once

#include <metal_stdlib>
#include <mps_ops/reduction.h>

namespace mps_ops {

// Where a thread's row starts, its length (0 for threads past the last row)
// and the stride of its one dim. Rows are counted in 32 bits (the host
// checks their length).
struct row_walk {
  long start;
  uint length;
  long stride;
  long offset(uint i) const {
    return long(i) * stride;
  }
};

inline row_walk walk_row(constant reduction_layout& layout, thread const slice_thread& t) {
  if (!t.active) {
    return row_walk{0, 0, 0};
  }
  return row_walk{slice_offset<long>(layout, uint(t.slice)), uint(layout.inner_numel),
                  layout.inner_ndim == 0 ? 0 : layout.inner_strides[0]};
}

}  // namespace mps_ops
