// The jagged <-> padded conversions of torch's nested jagged tensors
// (fills for every torch release, 2.9 to 2.15: a nested tensor's
// to_padded_tensor and its construction from a padded one raised on a Mac;
// host stubs in csrc/operations/jagged.mm):
//   jagged_to_padded  padded[b, j] = values[offsets[b] + j] for j below
//                     batch b's length, else the padding value (a length
//                     past the padded rows is cut, as the CPU's);
//   padded_to_jagged  values[offsets[b] + j] = padded[b, j] for j below
//                     batch b's length.
// A thread per jagged_per_thread elements of a padded row (x: its place in
// the row, y the padded row), so both read or write each row whole,
// coalesced. Rows are moved as integers
// of the widest size up to 8 bytes that divides a row's bytes and the
// operands' starts (the host views every dtype so, complex64 as long): the
// kernels never compute with them. Offsets are checked where
// they are read (bad_offsets, a KernelFlag: no pass over them first):
//   word 0  a batch's rows are not inside the jagged side, or its length is
//           negative (to padded: bad_length says when the CPU takes one), or
//           (to jagged) past the padded rows;
//   word 1  (to jagged) the last offset is not total_L.
// A thread of a bad batch writes nothing it would not write anyway.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>

#include "jagged_params.h"
using namespace metal;

namespace {

// Batch `batch`'s jagged rows: the first, and how many.
struct batch_rows {
  long start;
  long length;
};

inline batch_rows rows_of(constant long* offsets, uint batch) {
  const long start = offsets[batch];
  return batch_rows{start, offsets[batch + 1] - start};
}

// A negative length, as the CPU's slices take it: the padded side's rows
// up to `length` from the end, which the jagged side's empty slice must
// match; where that leaves none (length <= -padded rows) the batch item is
// empty, all padding.
inline bool bad_length(long length, uint padded_rows) {
  return length < 0 && length + long(padded_rows) > 0;
}

// A thread's elements of one row, from `from` to `to`: every load, then
// every store (the loads in flight together).
template <typename T>
inline void copy_row(device T* to, constant T* from, uint first, mps_ops::jagged_params p) {
  T moved[mps_ops::jagged_per_thread];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < mps_ops::jagged_per_thread; ++k) {
    const ulong x = first + k * p.row_threads;
    if (x < p.inner) {
      moved[k] = from[x];
    }
  }
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < mps_ops::jagged_per_thread; ++k) {
    const ulong x = first + k * p.row_threads;
    if (x < p.inner) {
      to[x] = moved[k];
    }
  }
}

}  // namespace

template <typename T>
kernel void jagged_to_padded(device T* out [[buffer(0)]],
                             constant T* values [[buffer(1)]],
                             constant long* offsets [[buffer(2)]],
                             constant mps_ops::jagged_params& params [[buffer(3)]],
                             device int* bad_offsets [[buffer(4)]],
                             uint2 position [[thread_position_in_grid]]) {
  const mps_ops::jagged_params p = params;  // read once: the stores could alias it
  const uint batch = mps_ops::quotient(position.y, p.by_rows());
  const uint row = position.y - batch * p.rows;
  const batch_rows rows = rows_of(offsets, batch);
  // The rows read: the length cut at the padded rows, as the CPU's.
  const long read = min(rows.length, long(p.rows));
  if (bad_length(rows.length, p.rows) ||
      (read > 0 && (rows.start < 0 || rows.start + read > long(p.jagged_rows)))) {
    bad_offsets[0] = 1;
    return;
  }
  device T* out_row = out + ulong(position.y) * p.inner;
  if (long(row) >= read) {
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < mps_ops::jagged_per_thread; ++k) {
      const ulong x = position.x + k * p.row_threads;
      if (x < p.inner) {
        out_row[x] = static_cast<T>(p.padding);
      }
    }
    return;
  }
  copy_row(out_row, values + ulong(rows.start + long(row)) * p.inner, position.x, p);
}

template <typename T>
kernel void padded_to_jagged(device T* out [[buffer(0)]],
                             constant T* padded [[buffer(1)]],
                             constant long* offsets [[buffer(2)]],
                             constant mps_ops::jagged_params& params [[buffer(3)]],
                             device int* bad_offsets [[buffer(4)]],
                             constant uint& batches [[buffer(5)]],
                             uint2 position [[thread_position_in_grid]]) {
  const mps_ops::jagged_params p = params;
  const uint batch = mps_ops::quotient(position.y, p.by_rows());
  const uint row = position.y - batch * p.rows;
  const batch_rows rows = rows_of(offsets, batch);
  if (batch == batches - 1 && rows.start + rows.length != long(p.jagged_rows)) {
    bad_offsets[1] = 1;
    return;
  }
  // Any negative length raises here: offsets that run backwards could give
  // two batch items the same jagged rows, written in no order (the CPU's
  // serial copies take one of length <= -padded rows).
  if (rows.length < 0 || rows.length > long(p.rows) ||
      (rows.length > 0 && (rows.start < 0 || rows.start + rows.length > long(p.jagged_rows)))) {
    bad_offsets[0] = 1;
    return;
  }
  if (long(row) < rows.length) {
    copy_row(out + ulong(rows.start + long(row)) * p.inner, padded + ulong(position.y) * p.inner, position.x, p);
  }
}

// Rows moved as integers: uint8, int16, int32 and int64 kernels serve
// every dtype (the registry's computes_in).
#define MPS_OPS_JAGGED_TYPES(M, ...) M(__VA_ARGS__, uchar) M(__VA_ARGS__, short) M(__VA_ARGS__, int) M(__VA_ARGS__, long)
MPS_OPS_JAGGED_TYPES(MPS_OPS_INSTANTIATE_FOR_TYPE, jagged_to_padded, dense)
MPS_OPS_JAGGED_TYPES(MPS_OPS_INSTANTIATE_FOR_TYPE, padded_to_jagged, dense)
