// Parameters shared by margin_losses.metal and its host stub
// (csrc/operations/margin_losses.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

namespace mps_ops {

// multi_margin_loss (+ backward) over n samples of c classes, `share`
// threads per sample (a power of two; the host's row_threads); weighted:
// whether a weight tensor was given (else every weight is 1). Backward:
// the gradient of sample i is grad[grad_per_sample ? i : 0] * scale.
struct multi_margin_params {
  float margin;
  int p;
  int grad_per_sample;
  int weighted;
  long n;
  long c;
  float scale;
  unsigned int share;
};

// multilabel_margin_loss (+ backward): n samples of c classes; backward's
// gradient of sample i is grad[grad_per_sample ? i : 0] * scale.
struct multilabel_margin_params {
  int grad_per_sample;
  long n;
  long c;
  float scale;
};

}  // namespace mps_ops
