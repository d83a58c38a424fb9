// What the CUDA backend takes from torch: the current CUDA device and torch's
// current stream on it (so our kernels are ordered with torch's own work, as
// the Metal backend encodes on torch's MPS stream), and pinned host memory.
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>

#include <cstddef>

namespace mps_ops::cuda {

// torch's current CUDA device (torch.cuda.current_device()).
c10::Device current_device();
// torch's current stream on that device, as a CUstream / cudaStream_t.
void* current_stream(const c10::Device& device);
// Pinned host memory from torch's caching host allocator.
c10::DataPtr pinned_host_block(size_t bytes);
// Keeps a pinned block from reuse until the work now queued on device's
// current stream (an asynchronous copy from it) is done.
void keep_until_stream_done(const c10::DataPtr& block, const c10::Device& device);

}  // namespace mps_ops::cuda
