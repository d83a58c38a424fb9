// Parameters shared by nll_loss.metal and its host stub
// (csrc/operations/nll_loss.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

#include "include/mps_ops/fast_divisor.h"

namespace mps_ops {

// nll_loss and nll_loss2d over `positions` targets (samples times spatial
// positions), input viewed as (samples, classes, spatial) contiguous;
// weighted: whether a weight tensor was given (else every weight is 1).
// The reduced forward's first pass gives each threadgroup `chunk`
// consecutive positions. Backward: position p's gradient is
// -w[t] * grad[grad_per_position ? p : 0] * scale (scale: 1 / total weight
// for a mean, else 1).
// The spatial backward's classes per thread (nll_loss_backward_planes):
// each thread reads its target once per this many writes; segmentation's
// usual 19-150 classes take one to five chunks. (An enum: MSL has no
// program-scope constexpr outside the constant address space.)
enum { nll_classes_per_thread = 32 };

struct nll_loss_params {
  long classes;
  long spatial;
  long positions;
  long ignore_index;
  long chunk;
  int weighted;
  int grad_per_position;
  int mean;
  // spatial, as the host's divisor (fast_divisor.h): a position's sample
  // without a divide instruction (positions < 2**32: the host's check).
  fast_divisor by_spatial;
};

}  // namespace mps_ops
