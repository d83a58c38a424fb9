// nll_loss and nll_loss2d (forward and backward; the 1-D loss is the 2-D
// one with one spatial position). With x the input as (samples, classes,
// spatial), t the target of position p = (n, s) and w[t] its class weight
// (1 without a weight tensor):
//   term(p)   = -w[t] * x[n, t, s], weight(p) = w[t]; both 0 where t is ignore_index
//   none      out[p] = term(p)
//   sum       out = sum of terms; mean: that over the sum of weights
//             (total_weight, the sum of weights, is written either way)
//   backward  grad_in[n, t, s] = -w[t] * g(p), 0 elsewhere (nll_loss: the
//             host zero-fills grad_in, then one thread per sample writes its
//             one element; nll_loss2d: each element written once, below)
// A target outside [0, classes) other than ignore_index raises bad_target
// (the host's KernelFlag) and its position counts nothing, as a check
// before the kernel would cost a pass and a round trip. The reduced forward
// takes two passes, no atomics, and sums in one fixed order (each
// threadgroup's chunk, then the chunks in order), so it gives the same bits
// on every run; in float (the CPU sums half in half), rounded once. On
// Apple GPUs this replaces MPSGraph's nll_loss in every cross-entropy
// (torch 2.9 to 2.14).
#include <metal_stdlib>
#include <mps_ops/reduction.h>

#include "nll_loss_params.h"
using namespace metal;

namespace {

// A position's weight and term, both 0 where ignored or (bad_target raised)
// out of range.
struct loss_term {
  float term;
  float weight;
};

// A position's class: its target, or -1 where it is ignore_index or (then
// raising bad_target) outside [0, classes).
template <typename Target>
inline long counted_class(constant Target* target, constant mps_ops::nll_loss_params& p, long position,
                          device int* bad_target) {
  const long t = long(target[position]);
  if (t == p.ignore_index) {
    return -1;
  }
  if (t < 0 || t >= p.classes) {
    *bad_target = 1;
    return -1;
  }
  return t;
}

// The offset of class c at a position in the (samples, classes, spatial)
// input or grad_in. positions < 2**32 (the host's check): the sample in 32
// bits, where a 64-bit division costs more than the rest of the position's
// work.
inline long element_offset(constant mps_ops::nll_loss_params& p, long position, long c) {
  const uint n = uint(position) / uint(p.spatial), s = uint(position) - n * uint(p.spatial);
  return (long(n) * p.classes + c) * p.spatial + s;
}

// The gradient at a counted position's class c, in the CPU's order: the
// mean's division first, then the weight.
template <typename T>
inline float position_gradient(constant T* grad, constant T* weight, constant T* total_weight,
                               constant mps_ops::nll_loss_params& p, long position, long c) {
  const float g = float(grad[p.grad_per_position ? position : 0]);
  const float scaled = p.mean ? g / float(total_weight[0]) : g;
  return -scaled * (p.weighted ? float(weight[c]) : 1.0f);
}

template <typename T, typename Target>
inline loss_term position_term(constant T* x, constant Target* target, constant T* weight,
                               constant mps_ops::nll_loss_params& p, long position, device int* bad_target) {
  const long t = counted_class(target, p, position, bad_target);
  if (t < 0) {
    return loss_term{0.0f, 0.0f};
  }
  const float w = p.weighted ? float(weight[t]) : 1.0f;
  return loss_term{-w * float(x[element_offset(p, position, t)]), w};
}

struct term_sum {
  using state = loss_term;
  static state identity() { return state{0.0f, 0.0f}; }
  static state merge(state a, state b) { return state{a.term + b.term, a.weight + b.weight}; }
  static state shuffle_xor(state s, ushort mask) {
    return state{mps_ops::shuffle_xor(s.term, mask), mps_ops::shuffle_xor(s.weight, mask)};
  }
};

}  // namespace

// reduction none: one thread per position.
template <typename T, typename Target>
kernel void nll_loss(
    device T* out [[buffer(0)]],
    constant T* x [[buffer(1)]],
    constant Target* target [[buffer(2)]],
    constant T* weight [[buffer(3)]],
    device int* bad_target [[buffer(4)]],
    constant mps_ops::nll_loss_params& p [[buffer(5)]],
    uint position [[thread_position_in_grid]]) {
  if (long(position) < p.positions) {
    out[position] = static_cast<T>(position_term(x, target, weight, p, long(position), bad_target).term);
  }
}

// sum and mean, first pass: threadgroup g sums positions [g * chunk, (g + 1)
// * chunk) into partials[2g] (term sum) and partials[2g + 1] (weight sum).
template <typename T, typename Target>
kernel void nll_loss_partials(
    device float* partials [[buffer(0)]],
    constant T* x [[buffer(1)]],
    constant Target* target [[buffer(2)]],
    constant T* weight [[buffer(3)]],
    device int* bad_target [[buffer(4)]],
    constant mps_ops::nll_loss_params& p [[buffer(5)]],
    uint group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup loss_term merged[32];
  const mps_ops::group_position at{index, group_size, lane, simd_group, simd_size};
  const long begin = long(group) * p.chunk, end = min(begin + p.chunk, p.positions);
  loss_term sum = term_sum::identity();
  for (long position = begin + index; position < end; position += group_size) {
    sum = term_sum::merge(sum, position_term(x, target, weight, p, position, bad_target));
  }
  sum = mps_ops::merge_threadgroup<term_sum>(sum, merged, at);
  if (index == 0) {
    partials[2 * group] = sum.term;
    partials[2 * group + 1] = sum.weight;
  }
}

// sum and mean, second pass (one threadgroup): the chunks' partials in
// order, then out = the term sum (over the weight sum for a mean) and
// total_weight = the weight sum. A mean over no weight is 0 / 0: NaN, as on
// the CPU.
template <typename T>
kernel void nll_loss_merge(
    device T* out [[buffer(0)]],
    device T* total_weight [[buffer(1)]],
    constant float* partials [[buffer(2)]],
    constant mps_ops::nll_loss_params& p [[buffer(3)]],
    uint index [[thread_index_in_threadgroup]],
    uint group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup loss_term merged[32];
  const mps_ops::group_position at{index, group_size, lane, simd_group, simd_size};
  const long chunks = (p.positions + p.chunk - 1) / p.chunk;
  loss_term sum = term_sum::identity();
  for (long c = index; c < chunks; c += group_size) {
    sum = term_sum::merge(sum, loss_term{partials[2 * c], partials[2 * c + 1]});
  }
  sum = mps_ops::merge_threadgroup<term_sum>(sum, merged, at);
  if (index == 0) {
    out[0] = static_cast<T>(p.mean ? sum.term / sum.weight : sum.term);
    total_weight[0] = static_cast<T>(sum.weight);
  }
}

// Backward into a zero-filled grad_in: one thread per position.
template <typename T, typename Target>
kernel void nll_loss_backward(
    device T* grad_in [[buffer(0)]],
    constant T* grad [[buffer(1)]],
    constant Target* target [[buffer(2)]],
    constant T* weight [[buffer(3)]],
    constant T* total_weight [[buffer(4)]],
    device int* bad_target [[buffer(5)]],
    constant mps_ops::nll_loss_params& p [[buffer(6)]],
    uint position [[thread_position_in_grid]]) {
  if (long(position) >= p.positions) {
    return;
  }
  const long t = counted_class(target, p, long(position), bad_target);
  if (t >= 0) {
    grad_in[element_offset(p, long(position), t)] =
        static_cast<T>(position_gradient(grad, weight, total_weight, p, long(position), t));
  }
}

// Backward of a spatial loss (nll_loss2d: spatial > 1), every element of
// grad_in written in one pass: thread (s, chunk) of sample n = position /
// spatial writes classes [chunk * classes_per_thread, ...) at its position,
// the gradient at the target's class and 0 elsewhere. Consecutive threads
// write consecutive elements of each class plane, and no element is written
// twice, where a zero fill and a scatter write grad_in once whole and then
// one element per 32-byte sector again (on NVIDIA's H200: 0.62x torch's
// CUDA kernel for float; an Apple GPU pays the same second pass). The
// target is read once per chunk, its class's weight only by the thread
// whose chunk holds it.
template <typename T, typename Target>
kernel void nll_loss_backward_planes(
    device T* grad_in [[buffer(0)]],
    constant T* grad [[buffer(1)]],
    constant Target* target [[buffer(2)]],
    constant T* weight [[buffer(3)]],
    constant T* total_weight [[buffer(4)]],
    device int* bad_target [[buffer(5)]],
    constant mps_ops::nll_loss_params& p [[buffer(6)]],
    uint2 thread_at [[thread_position_in_grid]]) {
  const uint position = thread_at.x;
  if (long(position) >= p.positions) {
    return;
  }
  const long first = long(thread_at.y) * mps_ops::nll_classes_per_thread;
  const long last = min(first + mps_ops::nll_classes_per_thread, p.classes);
  const long t = counted_class(target, p, long(position), bad_target);  // -1: all 0
  const float value =
      t >= first && t < last ? position_gradient(grad, weight, total_weight, p, long(position), t) : 0.0f;
  device T* out = grad_in + element_offset(p, long(position), first);
  for (long c = first; c < last; ++c, out += p.spatial) {
    *out = static_cast<T>(c == t ? value : 0.0f);
  }
}

// The host name's first type is the target's (long or uchar), its second
// the input's: `nll_loss_dense_long_half`.
#define NLL_LOSS_INSTANTIATE(KERNEL, VARIANT, T)                                                     \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(KERNEL, VARIANT, long, T), KERNEL, T, long)                \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(KERNEL, VARIANT, uchar, T), KERNEL, T, uchar)

MPS_OPS_FOR_FLOATING(NLL_LOSS_INSTANTIATE, nll_loss, dense)
MPS_OPS_FOR_FLOATING(NLL_LOSS_INSTANTIATE, nll_loss_partials, reduce)
MPS_OPS_FOR_FLOATING(NLL_LOSS_INSTANTIATE, nll_loss_backward, dense)
// Long targets only: nll_loss2d, the one loss with more than one position per
// sample, refuses uint8 targets (the CPU's check).
#define NLL_LOSS_LONG_TARGETS_INSTANTIATE(KERNEL, VARIANT, T) \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(KERNEL, VARIANT, long, T), KERNEL, T, long)
MPS_OPS_FOR_FLOATING(NLL_LOSS_LONG_TARGETS_INSTANTIATE, nll_loss_backward_planes, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, nll_loss_merge, reduce)
