// Parameters shared by ctc_loss.metal and its host stub
// (csrc/operations/ctc_loss.mm): one definition, one layout. Plain C++ that
// MSL and the host compiler both accept (`long` is 64-bit on both sides).
#pragma once

namespace mps_ops {

// log_probs (time, batch, classes) contiguous; log_alpha and log_beta
// (batch, time, states) contiguous, states = 2 x the longest target + 1;
// the gradient like log_probs. Per batch entry b the host writes
// lengths[3b .. 3b + 2]: its input length, its target length and where its
// target starts in `targets` (whose elements lie target_stride apart).
struct ctc_loss_params {
  long time;
  long batch;
  long classes;
  long states;
  long blank;
  long target_stride;
  int zero_infinity;  // 0 or 1: a batch entry of infinite loss gets a zero gradient
};

// The slots of one batch entry in the lengths buffer.
enum { ctc_input_length = 0, ctc_target_length = 1, ctc_target_offset = 2, ctc_length_fields = 3 };

// The state table (ints, batch x ctc_state_rows x states): per batch entry
// and state, its label, whether alpha takes the skip from s - 2, the next
// lower state of the same label (-1: none) and whether it is its label's
// highest state.
enum { ctc_state_label = 0, ctc_state_skip = 1, ctc_state_link = 2, ctc_state_leader = 3, ctc_state_rows = 4 };

}  // namespace mps_ops
