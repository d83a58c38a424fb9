// The one interface between host stubs and whatever runs kernels: the CPU
// emulator on Linux (csrc/emulator/backend.cpp), Metal on macOS
// (csrc/metal/), or an NVIDIA GPU as a stand-in for an Apple one
// (csrc/cuda/). Host stubs never see which one is live.
#pragma once

// setup.py defines MPS_OPS_WITH_METAL or MPS_OPS_WITH_CUDA for those builds;
// any other build is the emulator's, and only it compiles csrc/emulator/.
#if !defined(MPS_OPS_WITH_METAL) && !defined(MPS_OPS_WITH_CUDA)
#define MPS_OPS_WITH_EMULATOR 1
#endif

#include <c10/core/DeviceType.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mps_ops {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

// One bound argument slot, as Metal sees it: a buffer (a storage handle plus a
// byte offset into it) or inline bytes (setBytes).
struct ArgSlot {
  const void* storage = nullptr;  // MTLBuffer on Metal, host address in the emulator,
                                  // device address on CUDA
  size_t offset = 0;              // bytes from the start of storage
  size_t bytes = 0;               // bytes the kernel may touch from offset
  const void* inline_data = nullptr;  // setBytes payload; storage is then nullptr
  bool bound = false;
};

constexpr int max_kernel_args = 31;  // Metal's buffer argument table size

// Backend-owned; lives as long as the process once found.
struct KernelHandle;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // Where tensors the kernels read and write must live.
  virtual c10::DeviceType device_type() const = 0;
  // nullptr when no kernel has that host name.
  virtual KernelHandle* find_kernel(const std::string& host_name) = 0;
  virtual const char* kernel_name(const KernelHandle* kernel) const = 0;
  virtual uint32_t max_threads_per_group(const KernelHandle* kernel) const = 0;
  // threadgroup_lengths: bytes of each [[threadgroup(N)]] argument
  // (setThreadgroupMemoryLength), max_kernel_args entries, or nullptr.
  virtual void dispatch(const KernelHandle* kernel, const ArgSlot* args, int count,
                        const uint32_t* threadgroup_lengths, Dim3 threads, Dim3 group) = 0;

  // Libraries compiled at run time (compile_shader): a library is looked up
  // by the handle the backend returned; kernels of it as above.
  virtual void* load_library(const std::string& path_or_source) = 0;
  virtual std::vector<std::string> library_kernel_names(void* library) = 0;
  virtual KernelHandle* find_library_kernel(void* library, const std::string& name) = 0;
  // A .metallib image (Apple GPU code). The emulator cannot run one and raises.
  virtual void* load_metallib(const void* data, size_t size) = 0;

  // Memory both kernels and the host see (KernelFlag): `storage` is what an
  // ArgSlot binds (with offsets into it), `host` the same bytes from the
  // host, which writes them before a dispatch and reads them after
  // wait_for_gpu(), with no fill or copy pass on the GPU. Zeroed, 16-byte
  // aligned, kept for the process.
  struct HostVisible {
    const void* storage = nullptr;
    void* host = nullptr;
  };
  virtual HostVisible allocate_host_visible(size_t bytes) = 0;
  // A zeroed word of host-visible memory (KernelFlag's own), which a backend
  // may have the GPU set in stream order to learn that it is done.
  struct DoneWord {
    const void* storage = nullptr;  // as HostVisible's, with the word's
    size_t offset = 0;              // byte offset into it
    volatile int32_t* host = nullptr;
  };
  // Has the GPU set `done` (to 1) once it has run everything enqueued so far
  // on the stream this thread dispatches to, without waiting for it, and
  // returns that stream (opaque; it lives for the process). The host may
  // read the word from any thread (acquire), and must not reuse it before it
  // is set: a mark still in flight would set the next holder's.
  virtual const void* mark_when_done(const DoneWord& done) = 0;
  // Returns once `done`, marked on `stream`, is set: the GPU has run what
  // came before the mark. Any thread may wait.
  virtual void wait_until_marked(const DoneWord& done, const void* stream) = 0;
  // Returns once the GPU has run everything enqueued so far on the stream
  // this thread dispatches to. `done` is left set or untouched.
  virtual void wait_for_gpu(const DoneWord& done) { wait_until_marked(done, mark_when_done(done)); }

  // Runs fn(context) on the calling thread, in both backends: every dispatch
  // enters whatever serialisation it needs by itself (PyTorch's MPS stream
  // queue on Metal), so fn may also call torch ops.
  virtual void run_command_block(void (*fn)(void*), void* context) = 0;
};

// The live backend, created on first use.
Backend& backend();

}  // namespace mps_ops
