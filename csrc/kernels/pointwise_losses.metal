// The point-wise losses (override ops: their stock MPS kernels run MPSGraph
// in every training step): mse_loss, smooth_l1_loss, huber_loss and
// binary_cross_entropy, forward and backward. With d = x - y, z = |d|, n the
// element count and g the incoming gradient (one value for all elements
// where the loss was reduced):
//   mse                 d^2                                   gradient 2 d g
//   smooth_l1 (beta)    z < beta ? z^2 / (2 beta) : z - beta / 2
//                       gradient clamp(d / beta, -1, 1) g (d <= -beta first: beta 0 gives -g at 0)
//   huber (delta)       z < delta ? z^2 / 2 : delta (z - delta / 2)
//                       gradient clamp(d, -delta, delta) g
//   binary_cross_entropy  w ((y - 1) max(log1p(-x), -100) - y max(log(x), -100))
//                       gradient w g (x - y) / max((1 - x) x, 1e-12)
// each gradient times norm (1 / n for a mean). The CPU's formulas, each in
// the CPU's order of operations, in float (the CPU rounds half and bfloat
// after each step). Every operand is flat: the host has given them one
// layout (their own where they share a dense one, else contiguous copies).
//   none      one pass, several elements per thread (the element-wise tiles)
//   mean/sum  two passes without atomics: each threadgroup sums its chunk,
//             then one group sums the chunks in order and divides: the same
//             bits on every run, the element-wise loss never written
//   backward  one pass, as none
// binary_cross_entropy's input or target outside [0, 1] (or NaN) raises
// bad_input (the host's flags) as the CPU raises; the other losses never
// touch the flags, nor does any loss the weight slot unless p.weighted.
#include <metal_stdlib>
#include <mps_ops/element_pairs.h>
#include <mps_ops/elementwise.h>
#include <mps_ops/reduction.h>

#include "pointwise_loss_params.h"
using namespace metal;

using params = mps_ops::pointwise_loss_params;

// A rule: the loss of one element, its domain, and its gradient (with the
// norm where the CPU applies it before any weight).
struct mse_loss_rule {
  static int domain_error(float, float) { return 0; }
  static float term(float x, float y, thread const params&) {
    const float d = x - y;
    return d * d;
  }
  // norm: 2 / n for a mean, else 2.
  static float gradient(float x, float y, float g, thread const params& p) { return p.norm * (x - y) * g; }
  static bool weight_then_norm() { return false; }
};

struct smooth_l1_loss_rule {
  static int domain_error(float, float) { return 0; }
  // beta 0 gives z, the L1 loss the CPU computes then.
  static float term(float x, float y, thread const params& p) {
    const float z = fabs(x - y), beta = p.threshold;
    return z < beta ? 0.5f * z * z / beta : z - 0.5f * beta;
  }
  static float gradient(float x, float y, float g, thread const params& p) {
    // Any beta, as the CPU's (2.9 on): beta 0 gives -g at d = 0, not the
    // L1 loss's 0; the backward does not refuse a negative beta.
    const float d = x - y, beta = p.threshold, scaled = p.norm * g;
    return d <= -beta ? -scaled : (d >= beta ? scaled : p.norm * d * g / beta);
  }
  static bool weight_then_norm() { return false; }
};

struct huber_loss_rule {
  static int domain_error(float, float) { return 0; }
  static float term(float x, float y, thread const params& p) {
    const float z = fabs(x - y), delta = p.threshold;
    return z < delta ? 0.5f * z * z : delta * (z - 0.5f * delta);
  }
  static float gradient(float x, float y, float g, thread const params& p) {
    const float d = x - y, delta = p.threshold;
    return d <= -delta ? -p.norm * g * delta : (d >= delta ? p.norm * g * delta : p.norm * d * g);
  }
  static bool weight_then_norm() { return false; }
};

namespace {

struct binary_cross_entropy_rule {
  // 1: the input outside [0, 1] (NaN too), 2: the target, as the CPU checks.
  static int domain_error(float x, float y) {
    return !(x >= 0.0f && x <= 1.0f) ? 1 : (!(y >= 0.0f && y <= 1.0f) ? 2 : 0);
  }
  // log1p(-x) on [0, 1], as the CPU takes it, without a division: with u =
  // 1 - x rounded, 1 - x = u - d exactly, d = (u - 1) + x (both steps exact:
  // Sterbenz), so log(1 - x) = log(u) + log(1 - d / u), whose first-order
  // term d / u corrects the rounding. 1 / u is taken as 2 - u: its error,
  // (1 - u)^2 / u, scales a d below half an ulp of u, and d is 0 from x =
  // 0.5 on (1 - x exact), so the correction adds under half an ulp to log's
  // own. (Goldberg's log(u) * x / (1 - u) divided per element: with two
  // logs, 0.65x torch's CUDA kernel on an H200; a division costs as much
  // on an Apple GPU with fast math off.)
  static float log1p_of_negative(float x) {
    const float u = 1.0f - x;
    const float d = (u - 1.0f) + x;
    return log(u) - d * (2.0f - u);
  }
  static float term(float x, float y, thread const params&) {
    return (y - 1.0f) * max(log1p_of_negative(x), -100.0f) - y * max(log(x), -100.0f);
  }
  // Without the weight and the norm: the CPU applies them after.
  static float gradient(float x, float y, float g, thread const params&) {
    return g * (x - y) / max((1.0f - x) * x, 1e-12f);
  }
  static bool weight_then_norm() { return true; }
};

// One element's weighted loss; operands outside the rule's domain raise
// bad_input[0] (the input) or bad_input[1] (the target) and count 0.
//
// read_params_once: each element kernel copies its params into registers
// before its first store, and the rules read that copy (the merge reads p
// in its one store's statement). On a target where a store
// (to the output, to bad_input) may alias the params and the inputs (CUDA's
// generic pointers; MSL's disjoint constant and device address spaces may
// tell Apple's compiler otherwise, unverified), every read of p after it was
// a load again, and each element's loads waited for the one before it (the
// backward reloaded p.norm and the incoming gradient after each element's
// store).
template <typename Rule, typename T>
inline float weighted_term(T x, T y, constant T* w, uint i, device int* bad_input, thread const params& p) {
  const int error = Rule::domain_error(float(x), float(y));
  if (error != 0) {
    bad_input[error - 1] = 1;
    return 0.0f;
  }
  const float term = Rule::term(float(x), float(y), p);
  return p.weighted ? term * float(w[i]) : term;
}

struct float_sum {
  using state = float;
  static state identity() { return 0.0f; }
  static state merge(state a, state b) { return a + b; }
  static state shuffle_xor(state s, ushort mask) { return mps_ops::shuffle_xor(s, mask); }
};

}  // namespace

// Reduction none: out[i] = the element's loss, per_thread<T>() elements per
// thread dealt out in tiles (elementwise.h). The host dispatches pieces of
// at most 2**31 elements (n is the piece's).
template <bool Whole, typename Rule, typename T>
inline void pointwise_loss_elements(device T* out, constant T* x, constant T* y, constant T* w,
                                    device int* bad_input, thread const params& p, uint first, uint count) {
  T a[mps_ops::per_thread<T>()], b[mps_ops::per_thread<T>()];
  mps_ops::load_dense<Whole>(a, x, first, count);
  mps_ops::load_dense<Whole>(b, y, first, count);
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < mps_ops::per_thread<T>(); ++k) {
    const uint i = first + k * mps_ops::elementwise_tile;
    if (Whole || i < count) {
      out[i] = static_cast<T>(weighted_term<Rule>(a[k], b[k], w, i, bad_input, p));
    }
  }
}

template <typename Rule, typename T>
kernel void pointwise_loss(
    device T* out [[buffer(0)]],
    constant T* x [[buffer(1)]],
    constant T* y [[buffer(2)]],
    constant T* w [[buffer(3)]],
    device int* bad_input [[buffer(4)]],
    constant params& p [[buffer(5)]],
    uint thread_index [[thread_position_in_grid]]) {
  const params q = p;  // read_params_once
  const uint first = mps_ops::first_element<T>(thread_index);
  const uint count = uint(q.n);
  // Unchecked whole tiles (elementwise.h, whole_dense_tile).
  if (mps_ops::whole_dense_tile<T>(first, count)) {
    pointwise_loss_elements<true, Rule>(out, x, y, w, bad_input, q, first, count);
  } else {
    pointwise_loss_elements<false, Rule>(out, x, y, w, bad_input, q, first, count);
  }
}

// Mean and sum, first pass: threadgroup g sums elements [g * chunk, (g + 1) *
// chunk) into partials[g], each thread taking a run of per_thread<T>()
// loads (group_size apart) before it adds any. Offsets inside the chunk
// (below 2**31 elements: the host's check) are 32-bit: 64-bit ones per
// element cost registers and instructions on every GPU.
template <typename Rule, typename T>
kernel void pointwise_loss_partials(
    device float* partials [[buffer(0)]],
    constant T* x [[buffer(1)]],
    constant T* y [[buffer(2)]],
    constant T* w [[buffer(3)]],
    device int* bad_input [[buffer(4)]],
    constant params& p [[buffer(5)]],
    uint group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup float merged[32];
  const mps_ops::group_position at{index, group_size, lane, simd_group, simd_size};
  // Runs of 4 loads for every type: half and bfloat's 8 (the element-wise
  // tiles') took the losses' partials to 56-64 registers (H100: half the
  // threads resident, binary_cross_entropy 0.63x torch).
  constexpr uint run = mps_ops::per_thread<float>();
  const params q = p;  // read_params_once
  const long begin = long(group) * q.chunk;
  const uint length = uint(min(q.chunk, q.n - begin));
  constant T* xs = x + begin;
  constant T* ys = y + begin;
  constant T* ws = q.weighted ? w + begin : w;
  float sum = 0.0f;
  // Whole runs first, every load in range, then what is left one element at
  // a time: a bounds test per load branched around it (half: 8 instructions
  // a load, H200).
  uint base = index;
  for (; base + (run - 1) * group_size < length; base += run * group_size) {
    T a[run], b[run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      a[k] = xs[base + k * group_size];
      b[k] = ys[base + k * group_size];
    }
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      sum += weighted_term<Rule>(a[k], b[k], ws, base + k * group_size, bad_input, q);
    }
  }
  for (; base < length; base += group_size) {
    sum += weighted_term<Rule>(xs[base], ys[base], ws, base, bad_input, q);
  }
  sum = mps_ops::merge_threadgroup<float_sum>(sum, merged, at);
  if (index == 0) {
    partials[group] = sum;
  }
}

// Mean and sum, second pass (one threadgroup): the chunks' sums in order,
// divided by n for a mean (an empty mean is 0 / 0, NaN, as on the CPU),
// written as the result's type Out, which may differ from the inputs'.
template <typename Out>
kernel void pointwise_loss_merge(
    device Out* out [[buffer(0)]],
    constant float* partials [[buffer(1)]],
    constant uint& chunks [[buffer(2)]],
    constant params& p [[buffer(3)]],
    uint index [[thread_index_in_threadgroup]],
    uint group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup float merged[32];
  const mps_ops::group_position at{index, group_size, lane, simd_group, simd_size};
  float sum = 0.0f;
  for (uint c = index; c < chunks; c += group_size) {
    sum += partials[c];
  }
  sum = mps_ops::merge_threadgroup<float_sum>(sum, merged, at);
  if (index == 0) {
    out[0] = static_cast<Out>(p.mean ? sum / float(p.n) : sum);
  }
}

// Backward: grad_in[i] = the loss's gradient times w[i] (where weighted)
// times g (g[i], or g[0] for a reduced loss), as pointwise_loss's tiles.
// A word is one element (E = single_elements<T>), or, for half and bfloat
// operands of an even count, each 4-byte aligned (the host's
// in_element_pairs), two (E = element_pairs<T>): half the load and store
// instructions, and one conversion per stored pair, the same gradient bit
// for bit. p.n counts elements; a thread takes per_thread of the stored
// type's words, as many bytes either way.
template <bool Whole, typename Rule, typename T, typename E>
inline void loss_backward_elements(device typename E::stored* grad_in, constant typename E::stored* x,
                                   constant typename E::stored* y, constant typename E::stored* w,
                                   constant T* grad, thread const params& p, uint first, uint count) {
  using stored = typename E::stored;
  constexpr uint K = mps_ops::per_thread<stored>();
  const bool weighted = p.weighted && Rule::weight_then_norm(), per_element = p.grad_per_element != 0;
  // Every operand loaded before the first store (read_params_once says why).
  stored a[K], b[K], incoming[K], weights[K];
  mps_ops::load_dense<Whole>(a, x, first, count);
  mps_ops::load_dense<Whole>(b, y, first, count);
  // One incoming gradient (a reduced loss's) is one element: never read as a word.
  const float single = per_element ? 0.0f : float(grad[0]);
  if (per_element) {
    mps_ops::load_dense<Whole>(incoming, reinterpret_cast<constant stored*>(grad), first, count);
  }
  if (weighted) {
    mps_ops::load_dense<Whole>(weights, w, first, count);
  }
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * mps_ops::elementwise_tile;
    if (Whole || i < count) {
      float gradient[E::width()];
      _Pragma("clang loop unroll(full)")
      for (uint j = 0; j < E::width(); ++j) {
        const float g = per_element ? E::element(E::load(incoming[k]), j) : single;
        gradient[j] = Rule::gradient(E::element(E::load(a[k]), j), E::element(E::load(b[k]), j), g, p);
        if (Rule::weight_then_norm()) {  // the CPU's order: the weight, then the mean's 1 / n
          gradient[j] = (weighted ? gradient[j] * E::element(E::load(weights[k]), j) : gradient[j]) * p.norm;
        }
      }
      grad_in[i] = E::store(gradient);
    }
  }
}

template <typename Rule, typename T, typename E>
inline void loss_backward_words(device typename E::stored* grad_in, constant typename E::stored* x,
                                constant typename E::stored* y, constant typename E::stored* w, constant T* grad,
                                constant params& p, uint thread_index) {
  using stored = typename E::stored;
  const uint first = mps_ops::first_element<stored>(thread_index);
  const params q = p;  // read_params_once
  const uint count = uint(q.n) / E::width();
  // Unchecked whole tiles (elementwise.h, whole_dense_tile).
  if (mps_ops::whole_dense_tile<stored>(first, count)) {
    loss_backward_elements<true, Rule, T, E>(grad_in, x, y, w, grad, q, first, count);
  } else {
    loss_backward_elements<false, Rule, T, E>(grad_in, x, y, w, grad, q, first, count);
  }
}

template <typename Rule, typename T>
kernel void pointwise_loss_backward(
    device T* grad_in [[buffer(0)]],
    constant T* x [[buffer(1)]],
    constant T* y [[buffer(2)]],
    constant T* w [[buffer(3)]],
    constant T* grad [[buffer(4)]],
    constant params& p [[buffer(5)]],
    uint thread_index [[thread_position_in_grid]]) {
  loss_backward_words<Rule, T, mps_ops::single_elements<T>>(grad_in, x, y, w, grad, p, thread_index);
}

template <typename Rule, typename T>
kernel void pointwise_loss_backward_pairs(
    device uint* grad_in [[buffer(0)]],
    constant uint* x [[buffer(1)]],
    constant uint* y [[buffer(2)]],
    constant uint* w [[buffer(3)]],
    constant T* grad [[buffer(4)]],
    constant params& p [[buffer(5)]],
    uint thread_index [[thread_position_in_grid]]) {
  loss_backward_words<Rule, T, mps_ops::element_pairs<T>>(grad_in, x, y, w, grad, p, thread_index);
}

// Host names `<loss>_<kernel>_<variant>_T_T`: mse_loss_backward_dense_half_half.
#define POINTWISE_LOSS_INSTANTIATE(LOSS, T)                                                                \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(LOSS, dense, T, T), pointwise_loss, LOSS##_rule, T)              \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(LOSS##_partials, reduce, T, T), pointwise_loss_partials,         \
                      LOSS##_rule, T)                                                                    \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(LOSS##_backward, dense, T, T), pointwise_loss_backward,          \
                      LOSS##_rule, T)

MPS_OPS_FOR_FLOATING(POINTWISE_LOSS_INSTANTIATE, mse_loss)
MPS_OPS_FOR_FLOATING(POINTWISE_LOSS_INSTANTIATE, smooth_l1_loss)
MPS_OPS_FOR_FLOATING(POINTWISE_LOSS_INSTANTIATE, huber_loss)
MPS_OPS_FOR_FLOATING(POINTWISE_LOSS_INSTANTIATE, binary_cross_entropy)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, pointwise_loss_merge, reduce)

// `<loss>_backward_pairs_dense_T_T`, half and bfloat only.
#define POINTWISE_LOSS_PAIRS_INSTANTIATE(LOSS, T)                                                         \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(LOSS##_backward_pairs, dense, T, T), pointwise_loss_backward_pairs, \
                      LOSS##_rule, T)
#define POINTWISE_LOSS_PAIRS_FOR_NARROW(LOSS) \
  POINTWISE_LOSS_PAIRS_INSTANTIATE(LOSS, half) POINTWISE_LOSS_PAIRS_INSTANTIATE(LOSS, bfloat)
POINTWISE_LOSS_PAIRS_FOR_NARROW(mse_loss)
POINTWISE_LOSS_PAIRS_FOR_NARROW(smooth_l1_loss)
POINTWISE_LOSS_PAIRS_FOR_NARROW(huber_loss)
POINTWISE_LOSS_PAIRS_FOR_NARROW(binary_cross_entropy)
