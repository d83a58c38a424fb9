// Stacks and records for the fibers of one threadgroup (collective kernels).
// Each stack has a guard area (16 pages) below it, so a kernel that overflows its stack
// faults instead of writing into its neighbour's. Reused across dispatches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mps_ops::emulator {

class FiberPool {
 public:
  static constexpr size_t stack_bytes = 128 * 1024;

  ~FiberPool();
  // Room for `count` fibers; returns false if memory could not be mapped.
  bool reserve(uint32_t count);
  unsigned char* stacks() const { return stacks_; }
  uint64_t stride() const { return stride_; }
  unsigned char* records() { return records_.data(); }
  uint32_t capacity() const { return capacity_; }
  // Whether addr lies in one of the guard pages.
  bool is_guard(const void* addr) const;

 private:
  unsigned char* region_ = nullptr;
  size_t region_bytes_ = 0;
  unsigned char* stacks_ = nullptr;  // first usable stack byte; stacks are stride_ apart
  uint64_t stride_ = 0;
  uint32_t capacity_ = 0;
  std::vector<unsigned char> records_;
};

}  // namespace mps_ops::emulator
