// Switches of the emulator that users and the test suite flip at run time
// (mps_ops.emulator.checked(), MPS_OPS_CHECKED=1, reverse group order).
#pragma once

#include <atomic>
#include <cstdint>

namespace mps_ops::emulator {

struct Options {
  // Bounds-checked buffers (checked_memory.h); on by default where
  // MPS_OPS_CHECKED=1 is set.
  std::atomic<bool> checked{false};
  // Threadgroups run last to first, to shake out ordering assumptions.
  std::atomic<bool> reverse_group_order{false};
  // Everything up to the kernel runs (lookup, binding, checks), the kernel
  // does not: benchmarks/bench_host.py measures the host path with it.
  std::atomic<bool> dry_run{false};
  // The most threads a pipeline reports it takes per threadgroup: 1024, or
  // less to stand in for an Apple GPU pipeline whose registers allow fewer
  // (its maxTotalThreadsPerThreadgroup, e.g. 768 or 896: not a power of two).
  std::atomic<uint32_t> pipeline_thread_limit{1024};
  // Set by the SIGINT handler that compile_shader's dispatch installs:
  // kernels stop before their next threadgroup (Ctrl-C on a kernel that
  // never returns). A plain int, the type a signal handler may write.
  volatile int stop = 0;
};

Options& options();

}  // namespace mps_ops::emulator
