// Picks the live backend at build time: Metal where setup.py compiled the
// Objective-C++ backend in (macOS), CUDA where it built for an NVIDIA GPU
// (MPS_OPS_BACKEND=cuda), the CPU emulator everywhere else.
#include "backend.h"

#if defined(MPS_OPS_WITH_METAL)
#include "../metal/metal_backend.h"
#elif defined(MPS_OPS_WITH_CUDA)
#include "../cuda/cuda_backend.h"
#else
#include "../emulator/backend.h"
#endif

namespace mps_ops {

Backend& backend() {
#if defined(MPS_OPS_WITH_METAL)
  return metal_backend();
#elif defined(MPS_OPS_WITH_CUDA)
  return cuda_backend();
#else
  return emulator_backend();
#endif
}

}  // namespace mps_ops
