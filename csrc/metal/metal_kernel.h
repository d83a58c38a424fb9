// KernelHandle on Metal: one compute pipeline and what dispatch checks
// against. Objective-C++ only (metal_library.mm makes them, metal_backend.mm
// dispatches them).
#pragma once

#if !defined(__OBJC__)
#error "metal_kernel.h is Objective-C++ (include it from the .mm files only)"
#endif

#include "metal_backend.h"

#import <Metal/Metal.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace mps_ops {

// Owned by the MetalLibrary that built it (its kernel map); lives as long as
// that library.
struct KernelHandle {
  KernelHandle(id<MTLComputePipelineState> pipeline_, std::string name_, KernelSlots slots_)
      : pipeline(pipeline_),
        name(std::move(name_)),
        slots(slots_),
        max_threads(static_cast<uint32_t>(pipeline_.maxTotalThreadsPerThreadgroup)),
        static_threadgroup_bytes(pipeline_.staticThreadgroupMemoryLength),
        max_threadgroup_bytes(pipeline_.device.maxThreadgroupMemoryLength) {}
  ~KernelHandle() {
    [pipeline release];
  }
  KernelHandle(const KernelHandle&) = delete;
  KernelHandle& operator=(const KernelHandle&) = delete;

  // +1 reference from newComputePipelineStateWithFunction, owned here and
  // released by the destructor.
  id<MTLComputePipelineState> pipeline;
  std::string name;
  // The argument slots the kernel declares; each must be set at dispatch.
  KernelSlots slots;
  // The pipeline's maxTotalThreadsPerThreadgroup: depends on the kernel's
  // register use, so it can be below the device's 1024.
  uint32_t max_threads;
  // Threadgroup memory the kernel declares statically, and the device's
  // limit on static plus setThreadgroupMemoryLength bytes (32 KiB on Apple GPUs).
  size_t static_threadgroup_bytes;
  size_t max_threadgroup_bytes;
};

}  // namespace mps_ops
