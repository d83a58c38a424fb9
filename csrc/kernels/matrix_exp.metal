// linalg_matrix_exp's Horner steps (csrc/operations/matrix_exp.mm): the
// Taylor polynomial of the scaled matrix evaluated as Paterson and
// Stockmeyer do, T = ((B_q A^p + B_q-1) A^p + ...) + B_0 with each block
// B_k = sum_j c_kp+j A^j. The matrix products are torch's matmul; this kernel
// adds one block to the product before it, so each step costs one pass over
// the powers instead of one per term. The sum runs in float (the stub hands
// float32 operands, whatever the input's dtype).
#include <metal_stdlib>
#include <mps_ops/instantiate.h>

#include "matrix_exp_params.h"
using namespace metal;

template <typename T>
kernel void taylor_block(device T* result [[buffer(0)]],
                         constant T* product [[buffer(1)]],
                         constant T* powers [[buffer(2)]],
                         constant mps_ops::taylor_block_params& p [[buffer(3)]],
                         uint index [[thread_position_in_grid]]) {
  const long square = long(p.n) * long(p.n);
  const long size = square * p.matrices;
  if (long(index) >= size) {
    return;
  }
  const long element = long(index) % square;
  const bool diagonal = element % (long(p.n) + 1) == 0;
  float sum = p.with_product != 0 ? float(product[index]) : 0.0f;
  sum += diagonal ? p.coefficients[0] : 0.0f;
  for (int k = 1; k < p.terms; ++k) {
    sum += p.coefficients[k] * float(powers[long(k - 1) * size + long(index)]);
  }
  result[index] = T(sum);
}

MPS_OPS_INSTANTIATE_FOR_TYPE(taylor_block, dense, float)
