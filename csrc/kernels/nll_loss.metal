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

// The params every position reads, loaded once per thread: read through p
// after a store to bad_target (which may alias p, for all the compiler
// knows), each position loaded them again, one round trip before its
// input's (H200 SASS). Kernels raise bad_target once, after their positions.
struct nll_fields {
  long classes;
  long spatial;
  long ignore_index;
  // p.by_spatial's fields (a struct member copied from constant memory is
  // a copy between address spaces).
  uint spatial_divisor, spatial_multiplier, spatial_shift;
  bool weighted;

  static nll_fields of(constant mps_ops::nll_loss_params& p) {
    return nll_fields{p.classes,
                      p.spatial,
                      p.ignore_index,
                      p.by_spatial.divisor,
                      p.by_spatial.multiplier,
                      p.by_spatial.shift,
                      p.weighted != 0};
  }

  // A position's class: its target t, or -1 where t is ignore_index or
  // (then setting bad) outside [0, classes).
  long counted_class(long t, thread bool& bad) const {
    const bool ignored = t == ignore_index, in_range = t >= 0 && t < classes;
    bad = bad || (!ignored && !in_range);
    return ignored || !in_range ? -1 : t;
  }

  // The offset of class c at a position in the (samples, classes, spatial)
  // input or grad_in: the sample by the host's divisor (positions < 2**32:
  // the host's check), where a 32-bit division cost more than the rest of
  // the position's work.
  long element_offset(uint position, long c) const {
    const mps_ops::fast_divisor by_spatial{spatial_divisor, spatial_multiplier, spatial_shift};
    const uint n = mps_ops::quotient(position, by_spatial);
    const uint s = mps_ops::remainder_of(position, n, by_spatial);
    return (long(n) * classes + c) * spatial + s;
  }
};

// The gradient at a counted position's class c, in the CPU's order: the
// mean's division first, then the weight.
template <typename T>
inline float position_gradient(constant T* grad, constant T* weight, constant T* total_weight,
                               constant mps_ops::nll_loss_params& p, long position, long c) {
  const float g = float(grad[p.grad_per_position ? position : 0]);
  const float scaled = p.mean ? g / float(total_weight[0]) : g;
  return -scaled * (p.weighted ? float(weight[c]) : 1.0f);
}

// The term of a position whose target is t.
template <typename T>
inline loss_term position_term(constant T* x, constant T* weight, thread const nll_fields& f, uint position,
                               long t, thread bool& bad) {
  const long c = f.counted_class(t, bad);
  if (c < 0) {
    return loss_term{0.0f, 0.0f};
  }
  const float w = f.weighted ? float(weight[c]) : 1.0f;
  return loss_term{-w * float(x[f.element_offset(position, c)]), w};
}

struct term_sum {
  using state = loss_term;
  static state identity() { return state{0.0f, 0.0f}; }
  static state merge(state a, state b) { return state{a.term + b.term, a.weight + b.weight}; }
  static state shuffle_xor(state s, ushort mask) {
    return state{mps_ops::shuffle_xor(s.term, mask), mps_ops::shuffle_xor(s.weight, mask)};
  }
};

// sum plus the terms of a thread's whole runs of 4 positions of a chunk
// (first position begin, `length` of them, threads group_size apart), from
// base on, which it leaves at the first position the runs did not take. Every
// load of a run is issued before any is used: one at a time, a position's
// two dependent loads (its target, then its input) were round trips in a
// row, each position's params loaded again after them. (On an H200 that
// kernel already kept enough threads in flight to be bound by the sectors it
// touches, 59 us against torch's 152 for nll_loss2d; this one issues 6.5 M
// instructions to its 11.4 M in the same time. A GPU with fewer threads in
// flight waits out the round trips.) Hence the loads are unconditional (an
// uncounted position reads class 0 and adds 0: the caller has classes > 0),
// and Weighted a template argument: a branch around any of them held the
// next position's loads behind it. Terms are added in position order, as
// one at a time.
template <bool Weighted, typename T, typename Target>
inline loss_term add_runs(loss_term sum, constant T* x, constant Target* target, constant T* weight,
                          thread const nll_fields& f, uint begin, uint length, uint group_size, thread uint& base,
                          thread bool& bad) {
  constexpr uint run = 4;
  for (; base + (run - 1) * group_size < length; base += run * group_size) {
    long c[run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      c[k] = f.counted_class(long(target[begin + base + k * group_size]), bad);
    }
    float value[run], w[run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      const long read = max(c[k], 0l);
      value[k] = float(x[f.element_offset(begin + base + k * group_size, read)]);
      w[k] = Weighted ? float(weight[read]) : 1.0f;
    }
    // An uncounted position's term and weight masked to +0: a select
    // between them and 0 let the compiler sink their loads into a branch
    // (LLVM turns a select of a single-use load into one).
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      const uint keep = c[k] >= 0 ? 0xffffffffu : 0u;
      sum = term_sum::merge(sum, loss_term{as_type<float>(as_type<uint>(-w[k] * value[k]) & keep),
                                           as_type<float>(as_type<uint>(w[k]) & keep)});
    }
  }
  return sum;
}

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
  if (long(position) >= p.positions) {
    return;
  }
  const nll_fields f = nll_fields::of(p);
  bool bad = false;
  out[position] = static_cast<T>(position_term(x, weight, f, position, long(target[position]), bad).term);
  if (bad) {
    *bad_target = 1;
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
  const nll_fields f = nll_fields::of(p);
  // Positions and offsets within the chunk in 32 bits (positions < 2**32:
  // the host's check; a chunk is at most 2**22 + 1 of them there). Every
  // group's chunk starts before `positions` (the host's chunked_passes).
  const uint begin = group * uint(p.chunk);
  const uint length = uint(min(p.chunk, p.positions - long(begin)));
  bool bad = false;
  loss_term sum = term_sum::identity();
  uint base = index;
  if (f.classes > 0) {
    sum = f.weighted ? add_runs<true>(sum, x, target, weight, f, begin, length, group_size, base, bad)
                     : add_runs<false>(sum, x, target, weight, f, begin, length, group_size, base, bad);
  }
  for (; base < length; base += group_size) {
    sum = term_sum::merge(sum, position_term(x, weight, f, begin + base, long(target[begin + base]), bad));
  }
  if (bad) {
    *bad_target = 1;
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
  const nll_fields f = nll_fields::of(p);
  bool bad = false;
  const long t = f.counted_class(long(target[position]), bad);
  if (t >= 0) {
    grad_in[f.element_offset(position, t)] =
        static_cast<T>(position_gradient(grad, weight, total_weight, p, long(position), t));
  }
  if (bad) {
    *bad_target = 1;
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
  const nll_fields f = nll_fields::of(p);
  const long first = long(thread_at.y) * mps_ops::nll_classes_per_thread;
  const long last = min(first + mps_ops::nll_classes_per_thread, f.classes);
  bool bad = false;
  const long t = f.counted_class(long(target[position]), bad);  // -1: all 0
  const float value =
      t >= first && t < last ? position_gradient(grad, weight, total_weight, p, long(position), t) : 0.0f;
  device T* out = grad_in + f.element_offset(position, first);
  for (long c = first; c < last; ++c, out += f.spatial) {
    *out = static_cast<T>(c == t ? value : 0.0f);
  }
  if (bad) {
    *bad_target = 1;
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
