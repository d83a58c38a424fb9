// The per-channel element passes batch_norm.metal instantiates
// (batch_norm_apply: (x - c0) * c1 + c2; batch_norm_backward_apply: the
// channel_formula of batch_norm_params.h over g and x) over a dense tensor whose
// element i lies in channel (i / inner) % channels, with each channel's four
// float coefficients: batch_norm's, and weight_norm's through a 3-dim view
// (csrc/operations/batch_norm.mm, weight_norm.mm).
#pragma once

#include "host_name.h"
#include "reduction.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace mps_ops {

// An input (and what is read beside it) dense in `format`, its dim 1 the
// channels, the dims after it `inner` elements per channel run (contiguous)
// or 1 (channels-last), `per_sample` elements per index of dim 0.
struct ChannelLayout {
  at::MemoryFormat format;
  int64_t channels;
  int64_t inner;
  int64_t per_sample;
};

// The layout of `input` in its suggested memory format (contiguous or
// channels-last).
ChannelLayout channel_layout(const at::Tensor& input);

// The reduction over every dim but dim 1.
ReductionPlan channel_plan(const at::Tensor& x);

// One element pass over `out` and `inputs` (formula: the backward's
// channel_formula; the forward pass takes none) (all dense in layout.format), in
// pieces of whole indices of dim 0 of at most 2**32 - 1 elements (a piece's
// element i has the channel the whole tensor's has: an index of dim 0 is a
// whole number of channel runs).
void run_channel_pass(KernelCache& kernels, const at::Tensor& out, const std::vector<at::Tensor>& inputs,
                      const at::Tensor& coefficients, const ChannelLayout& layout, int formula);

}  // namespace mps_ops
