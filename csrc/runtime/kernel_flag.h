// Flags a kernel raises on bad input that only the kernel reads anyway (a
// class index out of range): checking them there costs one wait for the GPU
// after the dispatches, where a check before them costs a pass over the
// input and a round trip that leaves the GPU idle before the kernel starts.
//
// The words live in host-visible memory (Backend::allocate_host_visible:
// Metal's shared storage, CUDA's mapped pinned memory, the emulator's host
// memory): the host zeroes them and reads them in place, so a flag costs
// neither a fill pass before the kernel nor a copy back after it (on a Mac,
// a blit and its encoder switch each; both GPU time). Kernels take a flag as
// `device int*` and store 1 (every raising thread stores the same value, so
// no atomics); they must then skip the bad element's reads and writes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mps_ops {

class KernelFlag {
 public:
  // Most words one flag binds (binary_cross_entropy's input and target).
  static constexpr int max_words = 4;

  explicit KernelFlag(int words = 1);
  ~KernelFlag();
  KernelFlag(const KernelFlag&) = delete;
  KernelFlag& operator=(const KernelFlag&) = delete;
  KernelFlag(KernelFlag&& other) noexcept;
  KernelFlag& operator=(KernelFlag&&) = delete;

  // Whether a kernel raised word `word`: the first call waits for the GPU
  // (false at once when no kernel was handed the flag).
  // (A stub whose kernels never raise it, binding it only because they
  // declare it, need not ask.)
  bool raised(int word = 0) const;

  // Deferred checks (error_checks.h): has the GPU mark the flag once it has
  // run what was enqueued so far, then asks, without waiting, whether it
  // has; or waits for it (from any thread). raised() then reads the words
  // without a wait.
  void mark_when_done();
  bool finished() const;
  void wait_until_finished() const;

  // What KernelFunction::bind binds: a buffer of words() ints.
  const void* storage() const { return storage_; }
  size_t offset() const { return offset_; }
  int words() const { return words_; }

 private:
  const void* storage_ = nullptr;  // the backend's block
  size_t offset_ = 0;              // bytes into it
  int32_t* host_ = nullptr;        // the same words from the host
  int words_ = 0;
  int exceptions_at_start_ = 0;  // std::uncaught_exceptions() when made
  mutable bool bound_ = false;   // a kernel was handed it (KernelFunction::bind)
  mutable bool waited_ = false;  // its kernels have run
  bool marked_ = false;          // mark_when_done was called
  const void* mark_stream_ = nullptr;  // ... on this stream (Backend::mark_when_done)
  friend class KernelFunction;
};

}  // namespace mps_ops
