#include "fiber_pool.h"

#include <mps_ops_emulator/kernel_abi.h>

#include <sys/mman.h>
#include <unistd.h>

namespace mps_ops::emulator {

namespace {
// A guard wider than one page: a frame larger than a page could otherwise
// step over it into the neighbouring stack.
size_t guard_size() {
  static const size_t size = 16 * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}
}  // namespace

FiberPool::~FiberPool() {
  if (region_) munmap(region_, region_bytes_);
}

bool FiberPool::reserve(uint32_t count) {
  if (count <= capacity_) return true;
  if (region_) munmap(region_, region_bytes_);
  region_ = nullptr;
  capacity_ = 0;
  const size_t page = guard_size();
  // Layout: [guard][stack] [guard][stack] ... : stacks grow down onto their guard.
  stride_ = stack_bytes + page;
  region_bytes_ = stride_ * count;
  void* mem = mmap(nullptr, region_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  if (mem == MAP_FAILED) return false;
  region_ = static_cast<unsigned char*>(mem);
  for (uint32_t i = 0; i < count; ++i) {
    mprotect(region_ + i * stride_, page, PROT_NONE);
  }
  stacks_ = region_ + page;
  records_.assign(size_t(count) * mps_ops_emu::fiber_record_bytes, 0);
  capacity_ = count;
  return true;
}

bool FiberPool::is_guard(const void* addr) const {
  const auto* p = static_cast<const unsigned char*>(addr);
  if (!region_ || p < region_ || p >= region_ + region_bytes_) return false;
  return size_t(p - region_) % stride_ < guard_size();
}

}  // namespace mps_ops::emulator
