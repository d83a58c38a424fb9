// Parameters shared by ormqr.metal and its host stub
// (csrc/operations/ormqr.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept.
#pragma once

namespace mps_ops {

// Each thread multiplies one vector of `other` (a column where Q is applied
// from the left, a row from the right) by the reflectors, in place in the
// result. Strides in elements; the batch is the grid's y.
struct ormqr_params {
  long reflectors;       // k: tau's last size
  long length;           // m: each reflector's and each vector's length
  long input_row_stride;     // the reflectors' storage (geqrf's input)
  long input_column_stride;
  long input_batch_stride;
  long tau_batch_stride;
  long vector_stride;    // from one vector of the result to the next
  long element_stride;   // from one element of a vector to the next
  long result_batch_stride;
  bool ascending;        // H_1 first (Q^T from the left, Q from the right), else H_k first
};

}  // namespace mps_ops
