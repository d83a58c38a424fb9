// Checked mode: every buffer a kernel sees is a copy placed so that its last
// byte abuts an inaccessible page, with another one in front. A read or write
// past the end (one element past included) faults at once; the fault handler
// jumps back to the dispatch, which raises an error naming the kernel, the
// buffer index and the byte offset. Writes before the start land in a
// poisoned gap checked after the kernel. Results are copied back only when
// the kernel completed, byte by byte where they changed. Known difference
// from the GPU: slots bound to the same memory get separate copies, so a
// kernel that writes through one binding and reads the same bytes through
// another sees the old bytes here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mps_ops::emulator {

class FiberPool;

class CheckedBuffers {
 public:
  CheckedBuffers() = default;
  CheckedBuffers(const CheckedBuffers&) = delete;
  CheckedBuffers& operator=(const CheckedBuffers&) = delete;
  ~CheckedBuffers();

  // A guarded copy of [data, data + bytes) for buffer `index`; returns the
  // address the kernel gets.
  void* add(int index, void* data, size_t bytes);
  // Guarded scratch for threadgroup memory (declared arrays, or the
  // [[threadgroup(N)]] arena): poisoned, ending at an inaccessible page, never
  // copied back. nullptr if it cannot be mapped.
  unsigned char* add_threadgroup(size_t bytes);
  // Writes the copies back to the original buffers (not the read-only ones).
  void copy_back();
  // Non-empty if something was written into the gap before a buffer.
  std::string underflow_report() const;
  // Describes a faulting address inside one of the guard areas, or "" if it
  // is not ours.
  std::string describe(const void* addr) const;

 private:
  struct Shadow {
    int index;  // buffer(index), or threadgroup storage number -1 - index
    void* original;
    size_t bytes;
    unsigned char* region;
    size_t region_bytes;
    unsigned char* data;
    std::vector<unsigned char> before;  // the bytes as the kernel found them
  };
  std::vector<Shadow> shadows_;
  int threadgroup_count_ = 0;
};

// Runs `launch` so that it can be stopped from inside: abort_dispatch (a
// bounds-checked access that failed) returns here with its message. With
// `buffers` (checked mode), a fault handler also turns a hit on a guard page
// of `buffers` or of a fiber stack into a message instead of a crash.
// Returns "" when the kernel completed.
std::string run_guarded(void (*launch)(const void*), const void* argument, const CheckedBuffers* buffers,
                        const FiberPool* fibers);

// Ends the innermost run_guarded of this thread with `message`.
[[noreturn]] void abort_dispatch(const char* message);

}  // namespace mps_ops::emulator
