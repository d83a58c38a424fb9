// Parameters shared by matrix_exp.metal and its host stub
// (csrc/operations/matrix_exp.mm): one definition, one layout. Plain C++
// that MSL and the host compiler both accept.
#pragma once

namespace mps_ops {

// The most terms one block of the Taylor polynomial adds: c_0 I + c_1 A +
// ... + c_p A^p with p <= 4 (the stub's Paterson-Stockmeyer schedules).
enum { taylor_block_max_terms = 5 };

// One Horner step of the Taylor polynomial, one thread per element of the
// n x n matrices (all operands contiguous, matrices one after another):
// result = [product] + sum_k coefficients[k] A^k, A^0 = I, A^k read from
// `powers` (A^1, A^2, ... each `matrices` matrices long).
struct taylor_block_params {
  int n;
  int terms;         // coefficients used, 1 .. taylor_block_max_terms
  int with_product;  // 0: the first block, no product to add
  long matrices;
  float coefficients[taylor_block_max_terms];
};

}  // namespace mps_ops
