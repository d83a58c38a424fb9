// The rule both backends apply at every dispatch: each argument slot a kernel
// declares is set. The emulator has nothing to read otherwise; on Metal,
// PyTorch's shared compute encoder keeps the previous kernel's bindings, so a
// forgotten buffer would silently read another tensor.
#pragma once

#include "backend.h"

#include <c10/util/Exception.h>

#include <cstdint>

namespace mps_ops {

// buffer_slots / threadgroup_slots: bit N set where the kernel declares
// [[buffer(N)]] / [[threadgroup(N)]]. threadgroup_lengths: max_kernel_args
// entries or nullptr (none set).
inline void check_declared_slots(const char* kernel, uint32_t buffer_slots,
                                 uint32_t threadgroup_slots, const ArgSlot* args, int count,
                                 const uint32_t* threadgroup_lengths) {
  for (int i = 0; i < max_kernel_args; ++i) {
    const uint32_t bit = uint32_t(1) << i;
    TORCH_CHECK(!(buffer_slots & bit) || (i < count && args[i].bound), "mps_ops: ", kernel,
                ": buffer(", i, ") is declared by the kernel but nothing is bound to it");
    TORCH_CHECK(!(threadgroup_slots & bit) ||
                    (threadgroup_lengths != nullptr && threadgroup_lengths[i] > 0),
                "mps_ops: ", kernel, ": threadgroup(", i,
                ") is declared by the kernel but has no memory length set");
  }
}

}  // namespace mps_ops
