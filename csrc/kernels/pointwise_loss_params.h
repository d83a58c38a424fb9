// Parameters shared by pointwise_losses.metal and its host stub
// (csrc/operations/pointwise_losses.mm): one definition, one layout. Plain
// C++ that MSL and the host compiler both accept (`long` is 64-bit on both
// sides).
#pragma once

namespace mps_ops {

// One loss over n elements, every operand flat and in one order (the host
// has given them one layout). threshold: smooth_l1_loss's beta, huber_loss's
// delta. norm: the backward's factor beside the loss's own derivative (1 / n
// for a mean, else 1; mse_loss's 2 is the rule's). chunk: the reduced
// forward's elements per threadgroup. weighted: binary_cross_entropy has a
// weight operand (else every weight is 1); grad_per_element: the backward's
// incoming gradient has one value per element (else one for all, a reduced
// loss's).
struct pointwise_loss_params {
  long n;
  long chunk;
  float threshold;
  float norm;
  int mean;
  int weighted;
  int grad_per_element;
};

}  // namespace mps_ops
