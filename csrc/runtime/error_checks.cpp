#include "error_checks.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <exception>
#include <mutex>
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

// One list for the process, in call order: a backward's checks are made on
// autograd's device threads, and the user's check_errors() must see them.
// Never destroyed: at exit its flags may still be marked in flight.
struct PendingChecks {
  std::mutex mutex;
  std::deque<PendingCheck> checks;
  std::atomic<size_t> count{0};  // checks.size(), read without the lock by every at_call check
};

PendingChecks& pending() {
  static PendingChecks* list = new PendingChecks();
  return *list;
}

bool finished(const std::vector<KernelFlag>& flags) {
  return std::all_of(flags.begin(), flags.end(), [](const KernelFlag& flag) { return flag.finished(); });
}

// Runs the checks whose kernels have run, in call order up to the first that
// has not (with wait: every check, after waiting for it), and raises the
// first error among them. The checks run outside the lock, taken off the
// list first: take's reads the index tensor with torch ops, which may reach
// another flagged op.
void run_checks(bool wait) {
  PendingChecks& list = pending();
  std::vector<PendingCheck> ready;
  {
    std::lock_guard<std::mutex> lock(list.mutex);
    while (!list.checks.empty() && (wait || finished(list.checks.front().flags))) {
      ready.push_back(std::move(list.checks.front()));
      list.checks.pop_front();
    }
    list.count.store(list.checks.size(), std::memory_order_relaxed);
  }
  std::exception_ptr first;
  for (PendingCheck& entry : ready) {
    // A fault raises here, and the flags left unread are retired.
    for (const KernelFlag& flag : entry.flags) flag.wait_until_finished();
    try {
      entry.check(entry.flags);
    } catch (c10::Error& error) {
      if (!first) {
        error.add_context("mps_ops: raised by the deferred error check (mps_ops.set_error_checks) of a call of " +
                          entry.op + ", whose results are not to be used");
        first = std::current_exception();
      }
    } catch (...) {
      if (!first) first = std::current_exception();
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
    if (pending_error_checks() > 0) {
      run_checks(/*wait=*/true);  // made before another thread switched back to at_call
    }
    check(flags);
    return;
  }
  for (KernelFlag& flag : flags) flag.mark_when_done();
  PendingChecks& list = pending();
  size_t waiting = 0;
  {
    std::lock_guard<std::mutex> lock(list.mutex);
    list.checks.push_back(PendingCheck{op, std::move(flags), std::move(check)});
    waiting = list.checks.size();
    list.count.store(waiting, std::memory_order_relaxed);
  }
  run_checks(/*wait=*/waiting > max_pending_error_checks);
}

void check_flag(const char* op, KernelFlag flag, std::function<void(const KernelFlag& flag)> check) {
  std::vector<KernelFlag> flags;
  flags.push_back(std::move(flag));
  check_flags(op, std::move(flags), [check = std::move(check)](const std::vector<KernelFlag>& held) {
    check(held.front());
  });
}

void check_errors() { run_checks(/*wait=*/true); }

size_t pending_error_checks() { return pending().count.load(std::memory_order_relaxed); }

}  // namespace mps_ops
