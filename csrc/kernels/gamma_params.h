// Parameters shared by gamma.metal and its host stub
// (csrc/operations/gamma.mm): one definition, one layout. Plain C++ that
// MSL and the host compiler both accept.
#pragma once

namespace mps_ops {

// _sample_dirichlet's rows: `rows` of `row_length` elements (the last dim),
// each reduced by `row_lanes` lanes of one SIMD group (a power of two, at
// most 32: the host's choice for the row length).
struct dirichlet_params {
  unsigned int rows;
  unsigned int row_length;
  unsigned int row_lanes;
};

}  // namespace mps_ops
