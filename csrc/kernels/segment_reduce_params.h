// Parameters shared by segment_reduce.metal and its host stub
// (csrc/operations/segment_reduce.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

namespace mps_ops {

// The output (forward) or data (backward) elements each thread takes.
enum { segment_elements_per_thread = 4 };

// _segment_reduce (+ backward): data viewed as (outer, length, inner) around
// the reduced axis, segments per outer row; offsets (outer, segments + 1).
// reduction: 0 sum, 1 mean, 2 max, 3 min, 4 prod.
struct segment_params {
  long outer;
  long length;
  long inner;
  long segments;
  int reduction;
  int has_initial;
  float initial;
};

}  // namespace mps_ops
