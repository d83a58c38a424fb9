#include "error_checks.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <exception>
#include <string>
#include <utility>

namespace mps_ops {

namespace {

std::atomic<ErrorChecks> mode{ErrorChecks::at_call};

struct PendingCheck {
  std::string op;
  std::vector<KernelFlag> flags;  // marked (KernelFlag::mark_when_done)
  FlagCheck check;
};

// Per thread: a check waits on the stream its thread dispatched to. At
// thread exit the unrun ones go unreported, and their flags' memory is
// retired (KernelFlag's destructor).
thread_local std::deque<PendingCheck> pending;

bool finished(const std::vector<KernelFlag>& flags) {
  return std::all_of(flags.begin(), flags.end(), [](const KernelFlag& flag) { return flag.finished(); });
}

// Runs, in call order, every check whose kernels have run (with wait: every
// check, after waiting for them), and raises the first error among them.
void run_checks(bool wait) {
  std::exception_ptr first;
  for (auto it = pending.begin(); it != pending.end();) {
    if (wait) {
      for (const KernelFlag& flag : it->flags) flag.wait_until_finished();
    } else if (!finished(it->flags)) {
      ++it;
      continue;
    }
    PendingCheck entry = std::move(*it);
    it = pending.erase(it);
    try {
      entry.check(entry.flags);
    } catch (c10::Error& error) {
      if (!first) {
        error.add_context("mps_ops: found by a deferred error check (mps_ops.set_error_checks) of an earlier call "
                          "of " + entry.op + ", which returned results not to be used");
        first = std::current_exception();
      }
    }
  }
  if (first) {
    std::rethrow_exception(first);
  }
}

}  // namespace

ErrorChecks error_checks() { return mode.load(std::memory_order_relaxed); }

void set_error_checks(ErrorChecks new_mode) {
  mode.store(new_mode, std::memory_order_relaxed);
  if (new_mode == ErrorChecks::at_call) {
    run_checks(/*wait=*/true);
  }
}

void check_flags(const char* op, std::vector<KernelFlag> flags, FlagCheck check) {
  // finished() before any mark: no kernel was handed the flags.
  if (error_checks() == ErrorChecks::at_call || finished(flags)) {
    check(flags);
    return;
  }
  for (KernelFlag& flag : flags) flag.mark_when_done();
  pending.push_back(PendingCheck{op, std::move(flags), std::move(check)});
  run_checks(/*wait=*/pending.size() > max_pending_error_checks);
}

void check_flag(const char* op, KernelFlag flag, std::function<void(const KernelFlag& flag)> check) {
  std::vector<KernelFlag> flags;
  flags.push_back(std::move(flag));
  check_flags(op, std::move(flags), [check = std::move(check)](const std::vector<KernelFlag>& held) {
    check(held.front());
  });
}

void check_errors() { run_checks(/*wait=*/true); }

size_t pending_error_checks() { return pending.size(); }

}  // namespace mps_ops
