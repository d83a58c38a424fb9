#pragma once

#include "../runtime/backend.h"  // MPS_OPS_WITH_EMULATOR

#if defined(MPS_OPS_WITH_EMULATOR)
#include "../emulator/options.h"
#endif

#include <csignal>

namespace mps_ops::python {

// While a compile_shader kernel runs on the emulator, SIGINT asks it to stop
// (emulator::Options::stop) instead of reaching Python's handler, which
// cannot run until the kernel returns; the previous handler comes back after.
// On Metal the GPU runs the kernel: nothing to stop here.
class InterruptScope {
 public:
  // Constructed and destroyed with the GIL held, which orders the scopes of
  // several threads: the first installs the handler, the last restores it.
  InterruptScope() {
#if defined(MPS_OPS_WITH_EMULATOR)
    if (depth()++ == 0) {
      emulator::options().stop = 0;
      struct sigaction action {};
      action.sa_handler = [](int) { emulator::options().stop = 1; };
      sigemptyset(&action.sa_mask);
      sigaction(SIGINT, &action, &previous());
    }
#endif
  }
  ~InterruptScope() {
#if defined(MPS_OPS_WITH_EMULATOR)
    if (--depth() == 0) {
      sigaction(SIGINT, &previous(), nullptr);
      emulator::options().stop = 0;
    }
#endif
  }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
  bool interrupted() const {
#if defined(MPS_OPS_WITH_EMULATOR)
    return emulator::options().stop != 0;
#else
    return false;
#endif
  }

 private:
#if defined(MPS_OPS_WITH_EMULATOR)
  static int& depth() {
    static int open = 0;
    return open;
  }
  static struct sigaction& previous() {
    static struct sigaction handler {};
    return handler;
  }
#endif
};


}  // namespace mps_ops::python
