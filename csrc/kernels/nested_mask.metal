// _nested_tensor_from_mask_left_aligned: whether every row of a boolean mask
// (true: a token, false: padding) is left-aligned, its trues all before its
// falses. A row is not exactly where a false is followed by a true, so each
// thread checks one neighbouring pair of one row and raises the flag at a
// rise: each element read at most twice, no loop, no reduction; a 2-D grid
// (pairs along x, rows along y) divides nothing.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>

#include "nested_mask_params.h"
using namespace metal;

template <typename T>
kernel void mask_left_aligned(device int* flag [[buffer(0)]],
                              constant T* mask [[buffer(1)]],
                              constant mps_ops::mask_rows_params& params [[buffer(2)]],
                              uint2 pair [[thread_position_in_grid]]) {
  constant T* row = mask + long(pair.y) * params.row_stride;
  const long column = long(pair.x) + 1;
  if (row[column * params.column_stride] && !row[(column - 1) * params.column_stride]) {
    *flag = 1;
  }
}

MPS_OPS_FOR_BOOL(MPS_OPS_INSTANTIATE_FOR_TYPE, mask_left_aligned, dense)
