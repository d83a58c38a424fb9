// The one way a kernel's parameter struct travels from a host stub through the
// shared dispatch helpers (exec_elementwise, dispatch_per_element,
// dispatch_reduction) to KernelFunction::bind: made from the struct itself, so
// its size is the struct's and never a second number the caller writes.
#pragma once

#include <cstddef>
#include <type_traits>

namespace mps_ops {

class KernelParams {
 public:
  // No parameters: binds nothing (the kernel declares no parameter slot).
  KernelParams() = default;

  // The struct is read at bind time, so it must outlive the dispatch call
  // it is passed to (a temporary lives to the end of that full expression).
  template <class T>
  KernelParams(const T& params) : data_(&params), size_(sizeof(T)) {  // NOLINT: implicit on purpose
    static_assert(std::is_trivially_copyable_v<T>,
                  "kernel parameters are copied as bytes: a plain struct or scalar");
    static_assert(!std::is_pointer_v<T>, "pass the parameter struct itself, not its address");
    static_assert(!std::is_same_v<T, KernelParams>);
  }

  bool empty() const { return data_ == nullptr; }
  const void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace mps_ops
