// _masked_softmax and its backward along one dim. Input, mask and output
// are contiguous and of one shape (the host expands the (L, L) and (B, L)
// mask types), so one reduction layout addresses all three. A True mask
// element counts as -inf, as on the CPU: it gets 0, and a row with nothing
// unmasked is NaN throughout. One threadgroup per row, in float:
//   forward   out = exp(v - max) / sum exp(v - max), v = mask ? -inf : x
//   backward  grad_in = mask ? 0 : out * (grad - sum over unmasked of grad * out)
#include <metal_stdlib>
#include <mps_ops/reduction.h>
using namespace metal;

namespace {

template <typename T>
inline float unmasked_value(constant T* in, constant bool* mask, long at_i) {
  return mask[at_i] ? -numeric_limits<float>::infinity() : float(in[at_i]);
}

}  // namespace

template <typename T>
kernel void masked_softmax(
    device T* out [[buffer(0)]],
    constant T* in [[buffer(1)]],
    constant bool* mask [[buffer(2)]],
    constant mps_ops::reduction_layout& layout [[buffer(3)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup float partials[32];
  threadgroup float row_max;
  threadgroup float row_sum;
  mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const long start = mps_ops::slice_offset<long>(layout, group.y), n = layout.inner_numel;

  float local_max = mps_ops::float_max::identity();
  for (long i = index; i < n; i += group_size.x) {
    local_max = mps_ops::float_max::merge(local_max, unmasked_value(in, mask, start + mps_ops::reduced_offset(layout, i)));
  }
  local_max = mps_ops::merge_threadgroup<mps_ops::float_max>(local_max, partials, at);
  if (index == 0) {
    row_max = local_max;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const float m = row_max;

  float sum = 0.0f;
  for (long i = index; i < n; i += group_size.x) {
    sum += exp(unmasked_value(in, mask, start + mps_ops::reduced_offset(layout, i)) - m);
  }
  // partials is reused: every thread has read its last value before the
  // barrier above.
  sum = mps_ops::merge_threadgroup<mps_ops::float_sum>(sum, partials, at);
  if (index == 0) {
    row_sum = sum;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const float total = row_sum;
  for (long i = index; i < n; i += group_size.x) {
    const long at_i = start + mps_ops::reduced_offset(layout, i);
    out[at_i] = static_cast<T>(exp(unmasked_value(in, mask, at_i) - m) / total);
  }
}

template <typename T>
kernel void masked_softmax_backward(
    device T* grad_in [[buffer(0)]],
    constant T* grad [[buffer(1)]],
    constant T* out [[buffer(2)]],
    constant bool* mask [[buffer(3)]],
    constant mps_ops::reduction_layout& layout [[buffer(4)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup float partials[32];
  threadgroup float row_dot;
  mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const long start = mps_ops::slice_offset<long>(layout, group.y), n = layout.inner_numel;
  float dot = 0.0f;
  for (long i = index; i < n; i += group_size.x) {
    const long at_i = start + mps_ops::reduced_offset(layout, i);
    if (!mask[at_i]) {
      dot += float(grad[at_i]) * float(out[at_i]);
    }
  }
  dot = mps_ops::merge_threadgroup<mps_ops::float_sum>(dot, partials, at);
  if (index == 0) {
    row_dot = dot;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const float d = row_dot;
  for (long i = index; i < n; i += group_size.x) {
    const long at_i = start + mps_ops::reduced_offset(layout, i);
    // The CPU subtracts in double; where the float difference overflows,
    // out * grad - out * d stays finite as the CPU's result does.
    const float o = float(out[at_i]), g = float(grad[at_i]), difference = g - d;
    const float value = isfinite(difference) || !isfinite(g) || !isfinite(d) ? o * difference : o * g - o * d;
    grad_in[at_i] = static_cast<T>(mask[at_i] ? 0.0f : value);
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, masked_softmax, reduce)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, masked_softmax_backward, reduce)
