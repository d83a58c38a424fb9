// The connectionist temporal classification loss, forward and backward (a
// fill op for torch 2.9 to 2.13, where nn.CTCLoss raised on a Mac; the host
// stub in csrc/operations/ctc_loss.mm). With a target of length L, its
// 2L + 1 states s (even: the blank, odd: target element s / 2) and
// label(s) the class of state s, Graves et al.'s recursions in log space:
//   alpha[0][s]   = log_probs[0][label(s)] for s < 2, -inf beyond
//   alpha[t][s]   = logsumexp(alpha[t-1][s], alpha[t-1][s-1], alpha[t-1][s-2]
//                   where label(s-2) != label(s)) + log_probs[t][label(s)]
//   loss          = -logsumexp(alpha[T-1][2L], alpha[T-1][2L-1])
//   beta          the same from the last time step backwards
//   grad[t][c]    = (exp(lp) - exp(logsumexp over s of label c of
//                   alpha[t][s] + beta[t][s], + loss - lp)) x grad_out
// Each step rounds as the CPU's (LossCTC.cpp) does: the largest of the
// three terms subtracted (0 where all are -inf), compared in its order, so a
// NaN picks the same maximum. First a table of each batch entry's states
// (ctc_loss_states): label, whether the skip from s - 2 is allowed, and the
// next lower state of the same label, so the recursions read one int per
// state and the gradient can follow each class's states. One threadgroup
// per batch entry runs a recursion: its threads share the states of a time
// step, a barrier between steps (the previous step's row is read from
// device memory). The gradient takes one threadgroup per (time, batch
// entry): a thread per class present log-adds its states along the table's
// links, in the CPU's order (descending s: log-adds do not associate), then
// the threads finish the row's classes.
//
// A target outside [0, classes) raises bad_target (the host's KernelFlag)
// and reads as the blank, so nothing is read out of bounds; the CPU reads
// past log_probs there.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include "ctc_loss_params.h"
using namespace metal;

namespace {

constant constexpr float positive_infinity = numeric_limits<float>::infinity();
constant constexpr float negative_infinity = -positive_infinity;

struct ctc_target {
  long length;
  long offset;
};

template <typename TT>
inline int label_of(constant TT* targets, ctc_target target, long stride, long classes, long blank, long s) {
  if (s % 2 == 0) {
    return int(blank);
  }
  const long label = long(targets[target.offset + stride * (s / 2)]);
  return label >= 0 && label < classes ? int(label) : int(blank);  // ctc_loss_states raises it
}

// One batch entry's rows of the state table (mps_ops::ctc_state_* in the
// params header): each `states` ints.
struct state_rows {
  device int* labels;
  device int* skips;   // 1 where alpha[s] takes alpha[s - 2] (its label differs from s - 2's)
  device int* links;   // the next lower state of the same label, or -1
  device int* leaders;  // 1 for the highest state of its label
};

inline state_rows rows_of(device int* table, uint b, long states) {
  device int* base = table + long(b) * mps_ops::ctc_state_rows * states;
  return state_rows{base + mps_ops::ctc_state_label * states, base + mps_ops::ctc_state_skip * states,
                    base + mps_ops::ctc_state_link * states, base + mps_ops::ctc_state_leader * states};
}

// One step of either recursion: logsumexp of own (the same state), next
// (s - 1 forwards, s + 1 backwards) and skip (s -+ 2), where present, plus
// log_prob. The CPU's rounding: maximum in its comparison order, the sum
// of three exps, then + maximum + log_prob.
inline float recursion_step(float own, float next, bool has_next, float skip, bool has_skip, float log_prob) {
  float largest = own;
  if (!has_next) {
    next = negative_infinity;
  } else if (next > largest) {
    largest = next;
  }
  if (!has_skip) {
    skip = negative_infinity;
  } else if (skip > largest) {
    largest = skip;
  }
  if (largest == negative_infinity) {
    largest = 0.0f;  // -inf - -inf would be NaN
  }
  return log(exp(own - largest) + exp(next - largest) + exp(skip - largest)) + largest + log_prob;
}

// log(exp(sum) + exp(term)) as the CPU adds a state's alpha x beta into
// its class (std::max: sum unless sum < term).
inline float log_add(float sum, float term) {
  if (sum == negative_infinity) {
    return term;
  }
  const float largest = sum < term ? term : sum;
  return log(exp(sum - largest) + exp(term - largest)) + largest;
}

inline ctc_target target_of(constant long* lengths, uint b) {
  return ctc_target{lengths[b * mps_ops::ctc_length_fields + mps_ops::ctc_target_length],
                    lengths[b * mps_ops::ctc_length_fields + mps_ops::ctc_target_offset]};
}

inline long input_length_of(constant long* lengths, uint b) {
  return lengths[b * mps_ops::ctc_length_fields + mps_ops::ctc_input_length];
}

}  // namespace

// One threadgroup per batch entry b: its rows of the state table, and
// bad_target raised for a target outside [0, classes). The links come from
// one thread's walk up the states, remembering each class's last state in
// last_state[b] (a class of no state keeps -1).
template <typename TT>
kernel void ctc_loss_states(device int* state_table [[buffer(0)]],
                            device int* last_state [[buffer(1)]],
                            constant TT* targets [[buffer(2)]],
                            constant long* lengths [[buffer(3)]],
                            constant mps_ops::ctc_loss_params& params [[buffer(4)]],
                            device int* bad_target [[buffer(5)]],
                            uint b [[threadgroup_position_in_grid]],
                            uint lane [[thread_index_in_threadgroup]],
                            uint width [[threads_per_threadgroup]]) {
  const mps_ops::ctc_loss_params p = params;
  const ctc_target target = target_of(lengths, b);
  const long states = 2 * target.length + 1;
  bool bad = false;
  for (long k = lane; k < target.length; k += width) {
    const long label = long(targets[target.offset + p.target_stride * k]);
    bad = bad || label < 0 || label >= p.classes;
  }
  if (bad) {
    *bad_target = 1;
  }
  const state_rows rows = rows_of(state_table, b, p.states);
  device int* last = last_state + long(b) * p.classes;
  for (long s = lane; s < states; s += width) {
    const int label = label_of(targets, target, p.target_stride, p.classes, p.blank, s);
    rows.labels[s] = label;
    rows.skips[s] = s > 1 && label_of(targets, target, p.target_stride, p.classes, p.blank, s - 2) != label;
  }
  for (long c = lane; c < p.classes; c += width) {
    last[c] = -1;
  }
  threadgroup_barrier(mem_flags::mem_device);
  if (lane == 0) {
    for (long s = 0; s < states; ++s) {
      const int label = rows.labels[s];
      rows.links[s] = last[label];
      last[label] = int(s);
    }
  }
  threadgroup_barrier(mem_flags::mem_device);
  for (long s = lane; s < states; s += width) {
    rows.leaders[s] = last[rows.labels[s]] == int(s);
  }
}

// One threadgroup per batch entry b: log_alpha[b] (time x states) and the
// entry's loss. Entries the recursion does not reach (time steps past the
// input, states past the target) are -inf; the CPU leaves them unwritten.
template <typename T>  // float: the only dtype, named for the host-name grammar
kernel void ctc_loss_alpha(device float* log_alpha [[buffer(0)]],
                           device float* neg_log_likelihood [[buffer(1)]],
                           constant float* log_probs [[buffer(2)]],
                           device int* state_table [[buffer(3)]],
                           constant long* lengths [[buffer(4)]],
                           constant mps_ops::ctc_loss_params& params [[buffer(5)]],
                           uint b [[threadgroup_position_in_grid]],
                           uint lane [[thread_index_in_threadgroup]],
                           uint width [[threads_per_threadgroup]]) {
  const mps_ops::ctc_loss_params p = params;
  const long input_length = input_length_of(lengths, b);
  const ctc_target target = target_of(lengths, b);
  const long states = 2 * target.length + 1;
  const state_rows rows = rows_of(state_table, b, p.states);
  device float* alpha = log_alpha + long(b) * p.time * p.states;
  constant float* probs = log_probs + long(b) * p.classes;
  const long probs_time_stride = p.batch * p.classes;
  // Each thread owns the states s = lane + k x width at every time step,
  // so only a step's reads of the previous row cross threads.
  for (long s = lane; s < p.states; s += width) {
    const bool first_states = s < 2 && s < states;
    for (long t = 0; t < p.time; ++t) {
      if (t >= input_length || s >= states || (t == 0 && !first_states)) {
        alpha[t * p.states + s] = negative_infinity;
      } else if (t == 0) {
        alpha[s] = probs[rows.labels[s]];
      }
    }
  }
  for (long t = 1; t < input_length; ++t) {
    threadgroup_barrier(mem_flags::mem_device);
    device const float* previous = alpha + (t - 1) * p.states;
    for (long s = lane; s < states; s += width) {
      const bool has_skip = rows.skips[s] != 0;
      alpha[t * p.states + s] = recursion_step(previous[s], s > 0 ? previous[s - 1] : 0.0f, s > 0,
                                               has_skip ? previous[s - 2] : 0.0f, has_skip,
                                               probs[t * probs_time_stride + rows.labels[s]]);
    }
  }
  threadgroup_barrier(mem_flags::mem_device);
  if (lane != 0) {
    return;
  }
  float log_likelihood;
  if (input_length == 0) {
    log_likelihood = target.length == 0 ? 0.0f : negative_infinity;
  } else if (target.length == 0) {
    log_likelihood = alpha[(input_length - 1) * p.states];
  } else {
    const float last = alpha[(input_length - 1) * p.states + 2 * target.length];
    const float before = alpha[(input_length - 1) * p.states + 2 * target.length - 1];
    float largest = last < before ? before : last;
    largest = largest == negative_infinity ? 0.0f : largest;
    log_likelihood = log(exp(last - largest) + exp(before - largest)) + largest;
  }
  neg_log_likelihood[b] = -log_likelihood;
}

// One threadgroup per batch entry b: log_beta[b] at the time steps and
// states the gradient reads (t below the input length, s below 2L + 1).
// An entry whose gradient zero_infinity zeroes is skipped.
template <typename T>  // float: the only dtype, named for the host-name grammar
kernel void ctc_loss_beta(device float* log_beta [[buffer(0)]],
                          constant float* log_probs [[buffer(1)]],
                          device int* state_table [[buffer(2)]],
                          constant long* lengths [[buffer(3)]],
                          constant float* neg_log_likelihood [[buffer(4)]],
                          constant mps_ops::ctc_loss_params& params [[buffer(5)]],
                          uint b [[threadgroup_position_in_grid]],
                          uint lane [[thread_index_in_threadgroup]],
                          uint width [[threads_per_threadgroup]]) {
  const mps_ops::ctc_loss_params p = params;
  const long input_length = input_length_of(lengths, b);
  const ctc_target target = target_of(lengths, b);
  const long states = 2 * target.length + 1;
  const state_rows rows = rows_of(state_table, b, p.states);
  if (input_length == 0 || (p.zero_infinity != 0 && neg_log_likelihood[b] == positive_infinity)) {
    return;
  }
  device float* beta = log_beta + long(b) * p.time * p.states;
  constant float* probs = log_probs + long(b) * p.classes;
  const long probs_time_stride = p.batch * p.classes;
  const long last = input_length - 1;
  for (long s = lane; s < states; s += width) {
    const bool final_state = s >= 2 * target.length - 1;  // the blank after the target, or its last element
    beta[last * p.states + s] = final_state ? probs[last * probs_time_stride + rows.labels[s]] : negative_infinity;
  }
  for (long t = last - 1; t >= 0; --t) {
    threadgroup_barrier(mem_flags::mem_device);
    device const float* following = beta + (t + 1) * p.states;
    for (long s = lane; s < states; s += width) {
      const bool has_next = s < 2 * target.length;
      const bool has_skip = s < 2 * target.length - 1 && rows.skips[s + 2] != 0;  // label(s + 2) != label(s)
      beta[t * p.states + s] = recursion_step(following[s], has_next ? following[s + 1] : 0.0f, has_next,
                                              has_skip ? following[s + 2] : 0.0f, has_skip,
                                              probs[t * probs_time_stride + rows.labels[s]]);
    }
  }
}

// One threadgroup per (time step t, batch entry b), group index t x batch
// + b: the gradient's row grad[t][b][0 .. classes). Zero past the entry's
// input length, and where zero_infinity meets an infinite loss.
template <typename T>  // float: the only dtype, named for the host-name grammar
kernel void ctc_loss_gradient(device float* grad [[buffer(0)]],
                              constant float* grad_out [[buffer(1)]],
                              constant float* log_probs [[buffer(2)]],
                              device int* state_table [[buffer(3)]],
                              constant long* lengths [[buffer(4)]],
                              constant float* neg_log_likelihood [[buffer(5)]],
                              constant float* log_alpha [[buffer(6)]],
                              constant float* log_beta [[buffer(7)]],
                              constant mps_ops::ctc_loss_params& params [[buffer(8)]],
                              uint group [[threadgroup_position_in_grid]],
                              uint lane [[thread_index_in_threadgroup]],
                              uint width [[threads_per_threadgroup]]) {
  const mps_ops::ctc_loss_params p = params;
  const uint t = group / uint(p.batch);
  const uint b = group - t * uint(p.batch);
  const long input_length = input_length_of(lengths, b);
  const ctc_target target = target_of(lengths, b);
  const float nll = neg_log_likelihood[b];
  device float* row = grad + long(group) * p.classes;
  if (long(t) >= input_length || (p.zero_infinity != 0 && nll == positive_infinity)) {
    for (long c = lane; c < p.classes; c += width) {
      row[c] = 0.0f;
    }
    return;
  }
  for (long c = lane; c < p.classes; c += width) {
    row[c] = negative_infinity;  // the log of an empty sum
  }
  threadgroup_barrier(mem_flags::mem_device);
  const state_rows rows = rows_of(state_table, b, p.states);
  constant float* alpha = log_alpha + (long(b) * p.time + t) * p.states;
  constant float* beta = log_beta + (long(b) * p.time + t) * p.states;
  if (long(t) == input_length - 1) {
    // Only the two final states have a path on; the CPU assigns them (no
    // add: a blank and a target element differ, unless the target names
    // the blank, where the second replaces the first as there).
    if (lane == 0) {
      row[p.blank] = alpha[2 * target.length] + beta[2 * target.length];
      if (target.length > 0) {
        const long s = 2 * target.length - 1;
        row[rows.labels[s]] = alpha[s] + beta[s];
      }
    }
  } else {
    // A thread per class present (its highest state, the leader) adds its
    // states from the top down, as the CPU's loop over s does.
    for (long s = lane; s < 2 * target.length + 1; s += width) {
      if (rows.leaders[s] != 0) {
        float sum = negative_infinity;
        for (int state = int(s); state >= 0; state = rows.links[state]) {
          sum = log_add(sum, alpha[state] + beta[state]);
        }
        row[rows.labels[s]] = sum;
      }
    }
  }
  threadgroup_barrier(mem_flags::mem_device);
  const float gradient_scale = grad_out[b];
  constant float* probs = log_probs + long(group) * p.classes;
  for (long c = lane; c < p.classes; c += width) {
    const float lp = probs[c];
    row[c] = (exp(lp) - exp(row[c] + nll - lp)) * gradient_scale;
  }
}

// The state table per target dtype, as nll_loss's host names
// (<kernel>_dense_<target type>_float); the rest read the table.
MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(ctc_loss_states, dense, long, float), ctc_loss_states, long)
MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(ctc_loss_states, dense, int, float), ctc_loss_states, int)
MPS_OPS_INSTANTIATE_FOR_TYPE(ctc_loss_alpha, dense, float)
MPS_OPS_INSTANTIATE_FOR_TYPE(ctc_loss_beta, dense, float)
MPS_OPS_INSTANTIATE_FOR_TYPE(ctc_loss_gradient, dense, float)
