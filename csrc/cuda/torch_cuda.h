// What the CUDA backend takes from torch: the current CUDA device and torch's
// current stream on it (so our kernels are ordered with torch's own work, as
// the Metal backend encodes on torch's MPS stream).
#pragma once

#include <c10/core/Device.h>

namespace mps_ops::cuda {

// torch's current CUDA device (torch.cuda.current_device()).
c10::Device current_device();
// torch's current stream on that device, as a CUstream / cudaStream_t.
void* current_stream(const c10::Device& device);

}  // namespace mps_ops::cuda
