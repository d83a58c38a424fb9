// Parameters shared by group_norm_backward.metal and its host stub
// (csrc/operations/group_norm_backward.mm): one definition, one layout. Plain
// C++ that MSL and the host compiler both accept.
#pragma once

namespace mps_ops {

// `samples` x `channels` (n, c) pairs in `groups` groups of channels per
// sample; inv_count: 1 / the elements of a group (its channels times the
// spatial size). Flags are 0 or 1.
struct group_norm_backward_params {
  unsigned samples;
  unsigned channels;
  unsigned groups;
  float inv_count;
  int weighted;     // a weight was given, else every weight is 1
  int want_weight;  // the weight's gradient asked for
  int want_bias;    // the bias's
};

}  // namespace mps_ops
