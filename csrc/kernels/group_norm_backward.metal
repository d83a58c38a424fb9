// native_group_norm_backward (a fill op for torch 2.9 to 2.12: the host stub
// in csrc/operations/group_norm_backward.mm). Group norm normalises each
// (sample, group) over its channels' elements; its backward is batch_norm's
// with the (sample, channel) pairs as the channels, so batch_norm.metal's
// passes serve it (csrc/runtime/channel_pass.h):
//   per (n, c) sum(dy) and sum(dy (x - m)), m the group's mean
//             (batch_norm_backward_sums, one reduction over both);
//   per (n, g) group_norm_backward_groups: the group's sums weighted by
//             each channel's weight w, A = sum_c w dot and B = sum_c w sum,
//             and its channels' coefficients for the element pass;
//   per c     group_norm_backward_params: dweight = sum_n dot r, dbias =
//             sum_n sum (the samples in order);
//   per element (batch_norm_backward_apply's grouped_formula)
//             dx = dy r w - (x - m) A r^3 / M - B r / M, M the group's
//             element count: the CPU's r w dy + c2 x + c3 with its
//             c2 = (B m - ds) r^3 / M and c3 = -c2 m - B r / M, ds its
//             sum(dy x w) = A + B m, in the centred form, which keeps the
//             digits of x - m where |m| >> the spread.
// Everything computes in float; mean and rstd come as float.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include "batch_norm_params.h"
#include "group_norm_backward_params.h"
using namespace metal;

// One thread per (n, g), t = n * groups + g. Param: the weight's dtype.
template <typename Param>
kernel void group_norm_backward_groups(
    device float* coefficients [[buffer(0)]],
    constant float* grad_sum [[buffer(1)]],
    constant float* dot [[buffer(2)]],
    constant float* mean [[buffer(3)]],
    constant float* rstd [[buffer(4)]],
    constant Param* weight [[buffer(5)]],
    constant mps_ops::group_norm_backward_params& params [[buffer(6)]],
    uint t [[thread_position_in_grid]]) {
  const mps_ops::group_norm_backward_params p = params;
  if (t >= p.samples * p.groups) {
    return;
  }
  const uint per_group = p.channels / p.groups;
  const uint g = t % p.groups;
  // (n, c) of the group's first channel; N * C < 2**32 (the host checks).
  const uint first = (t / p.groups) * p.channels + g * per_group;
  const uint first_channel = g * per_group;
  float a = 0.0f, b = 0.0f;
  for (uint j = 0; j < per_group; ++j) {
    const float w = p.weighted != 0 ? float(weight[first_channel + j]) : 1.0f;
    a += w * dot[first + j];
    b += w * grad_sum[first + j];
  }
  const float m = mean[t], r = rstd[t];
  // A group of one element normalises to 0 whatever it holds: its gradient
  // is 0 (NaN where an operand is not finite), where the formula leaves its
  // rounding (dy r w - B r, B = w dy).
  const float one = p.inv_count == 1.0f ? 0.0f : 1.0f;
  const float k = a * r * r * r * p.inv_count * one;
  const float shift = b * r * p.inv_count * one;
  for (uint j = 0; j < per_group; ++j) {
    const float w = p.weighted != 0 ? float(weight[first_channel + j]) : 1.0f;
    device float* out = coefficients + ulong(first + j) * mps_ops::batch_norm_coefficients;
    out[0] = m;
    out[1] = k;
    out[2] = shift;
    out[3] = r * w * one;
  }
}

// One thread per channel c: its weight's and bias's gradients (as asked),
// the samples summed in order.
template <typename Param>
kernel void group_norm_backward_params(
    device Param* grad_weight [[buffer(0)]],
    device Param* grad_bias [[buffer(1)]],
    constant float* grad_sum [[buffer(2)]],
    constant float* dot [[buffer(3)]],
    constant float* rstd [[buffer(4)]],
    constant mps_ops::group_norm_backward_params& params [[buffer(5)]],
    uint c [[thread_position_in_grid]]) {
  const mps_ops::group_norm_backward_params p = params;
  if (c >= p.channels) {
    return;
  }
  const uint g = c / (p.channels / p.groups);
  float dweight = 0.0f, dbias = 0.0f;
  for (uint n = 0; n < p.samples; ++n) {
    dweight += dot[n * p.channels + c] * rstd[n * p.groups + g];
    dbias += grad_sum[n * p.channels + c];
  }
  if (p.want_weight != 0) {
    grad_weight[c] = static_cast<Param>(dweight);
  }
  if (p.want_bias != 0) {
    grad_bias[c] = static_cast<Param>(dbias);
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, group_norm_backward_groups, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, group_norm_backward_params, dense)
