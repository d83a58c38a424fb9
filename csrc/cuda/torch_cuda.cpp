// Two ways to ask torch for its current CUDA stream:
//
// - MPS_OPS_CUDA_TORCH_HEADERS (setup.py sets it when the torch it builds
//   against is a CUDA build and the toolkit's cuda_runtime_api.h is there, as
//   on the GPU machine): c10::cuda::getCurrentCUDAStream, linking libc10_cuda,
//   the way every CUDA extension of torch does it.
// - otherwise torch's device-generic interface (libc10 only): the device guard
//   torch's CUDA library registers at load time, and Stream::native_handle.
//   This is what compiles on a CPU build of torch, so the backend is
//   type-checked on machines without CUDA (tools/check_cuda_backend.py).
#include "torch_cuda.h"

#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#if defined(MPS_OPS_CUDA_TORCH_HEADERS)
#include <c10/cuda/CUDAStream.h>
#endif

namespace mps_ops::cuda {

namespace {

const c10::impl::DeviceGuardImplInterface& cuda_guard() {
  // Raises when torch has no CUDA support loaded (a CPU build of torch).
  TORCH_CHECK(c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA),
              "mps_ops cuda: this torch has no CUDA support (torch.cuda.is_available() is False?)");
  return *c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
}

}  // namespace

c10::Device current_device() {
  return cuda_guard().getDevice();
}

void* current_stream(const c10::Device& device) {
#if defined(MPS_OPS_CUDA_TORCH_HEADERS)
  return static_cast<void*>(c10::cuda::getCurrentCUDAStream(device.index()).stream());
#else
  return cuda_guard().getStream(device).native_handle();
#endif
}

c10::DataPtr pinned_host_block(size_t bytes) {
  return at::getHostAllocator(c10::DeviceType::CUDA)->allocate(bytes);
}

void keep_until_stream_done(const c10::DataPtr& block, const c10::Device& device) {
  const bool recorded = at::getHostAllocator(c10::DeviceType::CUDA)
                            ->record_event(block.get(), block.get_context(), cuda_guard().getStream(device));
  TORCH_CHECK(recorded, "mps_ops cuda: torch's host allocator did not take the pinned block's event");
}

}  // namespace mps_ops::cuda
