// Parameters shared by batch_norm.metal and its host stub
// (csrc/operations/batch_norm.mm): one definition, one layout. Plain C++
// that MSL and the host compiler both accept.
#pragma once

namespace mps_ops {

// Each channel's coefficients for the element passes, this many floats:
// forward (mean, invstd * weight, bias, unused), backward (mean, k,
// grad_mean, invstd * weight) in the CPU's names.
enum { batch_norm_coefficients = 4 };

// The per-channel passes (one thread per channel). Flags are 0 or 1.
struct batch_norm_channel_params {
  unsigned channels;
  float eps;
  float momentum;
  float unbias;     // n / (n - 1): the running variance takes the unbiased one
  float inv_count;  // 1 / n, n the elements per channel
  int training;
  int has_weight;
  int has_bias;     // forward
  int has_running;  // forward, training
  int want_weight;  // backward: the weight's gradient asked for
  int want_bias;    // backward: the bias's
};

// The element passes over `count` elements of a dense input in its memory
// order, element i in channel (i / inner) % channels (inner: the spatial
// size for contiguous inputs, 1 for channels-last ones). A thread steps
// elementwise_tile elements at a time: step_r = tile % inner and
// step_c = (tile / inner) % channels move its (i % inner, channel) without
// division.
struct batch_norm_apply_params {
  unsigned count;
  unsigned inner;
  unsigned channels;
  unsigned step_r;
  unsigned step_c;
  int formula;  // backward: which channel_formula
};

// The backward element pass's formulas, with channel coefficients c0..c3:
enum channel_formula {
  scaled_formula = 0,    // g * c3: batch_norm's evaluation
  centred_formula = 1,   // (g - c2 - (x - c0) * c1) * c3: batch_norm's training
  products_formula = 2,  // g * c3 - x * c1: weight_norm's, as the CPU orders it
  grouped_formula = 3,   // g * c3 - (x - c0) * c1 - c2: group_norm's, per (sample, channel)
};

}  // namespace mps_ops
