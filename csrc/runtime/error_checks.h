// When an op reports bad input that only its kernels see (a class index out
// of range), read back through KernelFlags.
//
// at_call, the default (DESIGN.md: bad input raises at the call): the op
// waits for the GPU once, after its dispatches, and raises before it returns.
//
// deferred (mps_ops.set_error_checks("deferred")): the op returns without
// waiting. Its check runs once the GPU has run its kernels: at a later
// flagged op (of any thread: a backward's run on autograd's device threads)
// that finds them run, at check_errors(), or once max_pending checks are
// waiting (one wait for all); in call order. It raises what the call would
// have raised, naming the op. Until then the op's outputs may hold what a
// raising call leaves (garbage). On a Mac this saves a command-buffer
// commit and wait per flagged call (a training step's cross_entropy: two);
// PyTorch's own Metal index kernels report errors the same way, at the next
// sync (c10/metal/error.h).
#pragma once

#include "kernel_flag.h"

#include <cstddef>
#include <functional>
#include <vector>

namespace mps_ops {

enum class ErrorChecks { at_call, deferred };

ErrorChecks error_checks();
// Process-wide. Back to at_call, the waiting checks run first.
void set_error_checks(ErrorChecks mode);

// Reads the flags (raised()) and throws what the CPU throws.
using FlagCheck = std::function<void(const std::vector<KernelFlag>& flags)>;

// Runs check on flags now (at_call) or once their kernels have run
// (deferred). `op` names the call in a deferred error.
void check_flags(const char* op, std::vector<KernelFlag> flags, FlagCheck check);
void check_flag(const char* op, KernelFlag flag, std::function<void(const KernelFlag& flag)> check);

// Waits for the waiting checks and raises the first error among them (the
// others are dropped).
void check_errors();
// Checks not yet run.
size_t pending_error_checks();

// More waiting checks than this and the next flagged call waits for all.
constexpr size_t max_pending_error_checks = 64;

}  // namespace mps_ops
