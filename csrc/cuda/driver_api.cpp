// libcuda.so.1 at run time: the driver ships with the GPU's kernel module, not
// with a toolkit, so a process that never touches the CUDA backend never
// needs it, and the extension builds without CUDA.
#include "driver_api.h"

#include <c10/util/Exception.h>

#include <dlfcn.h>

#include <mutex>

namespace mps_ops::cuda_driver {

namespace {

template <class Fn>
void resolve(void* library, const char* name, Fn& slot) {
  void* symbol = dlsym(library, name);
  TORCH_CHECK(symbol != nullptr, "mps_ops cuda: libcuda.so.1 has no ", name,
              " (a driver older than the CUDA driver API this backend uses?)");
  slot = reinterpret_cast<Fn>(symbol);
}

Driver load() {
  // RTLD_NOW: a missing symbol shows here, not mid-dispatch. The handle is
  // never closed: modules and functions stay valid for the process.
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  TORCH_CHECK(library != nullptr, "mps_ops cuda: cannot load libcuda.so.1 (the NVIDIA driver): ",
              dlerror());
  Driver d{};
  // Each entry point by its own name: the symbol and the member are one word.
#define MPS_OPS_CUDA_RESOLVE(NAME) resolve(library, #NAME, d.NAME);
  MPS_OPS_CUDA_RESOLVE(cuInit)
  MPS_OPS_CUDA_RESOLVE(cuDeviceGet)
  MPS_OPS_CUDA_RESOLVE(cuDevicePrimaryCtxRetain)
  MPS_OPS_CUDA_RESOLVE(cuCtxGetCurrent)
  MPS_OPS_CUDA_RESOLVE(cuCtxSetCurrent)
  MPS_OPS_CUDA_RESOLVE(cuModuleLoadDataEx)
  MPS_OPS_CUDA_RESOLVE(cuModuleGetFunction)
  MPS_OPS_CUDA_RESOLVE(cuFuncGetAttribute)
  MPS_OPS_CUDA_RESOLVE(cuFuncSetAttribute)
  MPS_OPS_CUDA_RESOLVE(cuLaunchKernel)
  MPS_OPS_CUDA_RESOLVE(cuStreamSynchronize)
  MPS_OPS_CUDA_RESOLVE(cuStreamQuery)
  resolve(library, cuStreamWriteValue32_symbol, d.cuStreamWriteValue32);
  resolve(library, cuMemcpyHtoDAsync_symbol, d.cuMemcpyHtoDAsync);
  MPS_OPS_CUDA_RESOLVE(cuMemHostAlloc)
  resolve(library, cuMemHostGetDevicePointer_symbol, d.cuMemHostGetDevicePointer);
  MPS_OPS_CUDA_RESOLVE(cuGetErrorName)
  MPS_OPS_CUDA_RESOLVE(cuGetErrorString)
#undef MPS_OPS_CUDA_RESOLVE
  return d;
}

}  // namespace

const Driver& driver() {
  // Not a function-local static initialised by load(): a failed load must
  // raise again on the next call, not leave a half-built table behind.
  static std::mutex mutex;
  static Driver loaded{};
  static bool ready = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (!ready) {
    Driver d = load();
    const CUresult init = d.cuInit(0);
    if (init != CUDA_SUCCESS) {
      const char* name = nullptr;
      d.cuGetErrorName(init, &name);
      TORCH_CHECK(false, "mps_ops cuda: cuInit failed: ", name ? name : "unknown error", " (", init,
                  "): is an NVIDIA GPU visible to this process?");
    }
    loaded = d;
    ready = true;
  }
  return loaded;
}

std::string describe(CUresult error) {
  const Driver& d = driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.cuGetErrorName(error, &name) != CUDA_SUCCESS || name == nullptr) name = "unknown CUDA error";
  if (d.cuGetErrorString(error, &text) != CUDA_SUCCESS || text == nullptr) text = "";
  return std::string(name) + " (" + std::to_string(error) + "): " + text;
}

void check(CUresult result, const std::string& what) {
  if (result == CUDA_SUCCESS) return;
  TORCH_CHECK(false, "mps_ops cuda: ", what, ": ", describe(result));
}

}  // namespace mps_ops::cuda_driver
