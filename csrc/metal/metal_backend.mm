// The Metal backend (Backend, csrc/runtime/backend.h): kernels found by host
// name, in the built-in libraries (builtin_libraries.h) or in libraries
// loaded at run time (MetalLibrary, metal_library.mm), and dispatched on
// PyTorch's current MPS stream, inside its serial queue, on its shared
// compute encoder, with dispatchThreads semantics. We never create an encoder
// or a command buffer and never commit: PyTorch commits the stream when it
// synchronizes, exactly as for its own Metal kernels (wait_for_gpu asks it
// to, inside the stream's queue as PyTorch's own read-backs do).
//
// Memory: manual retain/release, as PyTorch's MPS code (this file refuses to
// build under ARC); see metal_library.mm for the conventions.

#include "metal_backend.h"

#include "../runtime/declared_slots.h"
#include "builtin_libraries.h"
#include "embedded_kernels.h"
#include "metal_kernel.h"
#include "torch_mps_adapter.h"

#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#include <dispatch/dispatch.h>

#include <c10/util/Exception.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#if __has_feature(objc_arc)
#error "metal_backend.mm uses manual retain/release, like PyTorch's MPS code: build it without -fobjc-arc"
#endif

namespace mps_ops {

namespace {

// Metal's limit on setBytes payloads.
constexpr size_t max_inline_bytes = 4096;

// setThreadgroupMemoryLength takes multiples of 16 bytes.
constexpr uint64_t threadgroup_length_granule = 16;

NSUInteger round_up_threadgroup_length(uint32_t length) {
  return static_cast<NSUInteger>((uint64_t(length) + threadgroup_length_granule - 1) /
                                 threadgroup_length_granule * threadgroup_length_granule);
}

// What the build embedded (embedded_kernels.h), as BuiltinLibraries reads it.
EmbeddedKernels embedded_kernels() {
  EmbeddedKernels embedded;
  embedded.metallib = mps_ops_metallib;
  embedded.metallib_size = mps_ops_metallib_size;
  embedded.sources = mps_ops_kernel_sources;
  embedded.source_names = mps_ops_kernel_source_names;
  embedded.source_count = mps_ops_kernel_source_count;
  embedded.kernels = mps_ops_embedded_kernels;
  embedded.kernel_count = mps_ops_embedded_kernel_count;
  return embedded;
}

bool ends_with(const std::string& text, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return text.size() >= n && text.compare(text.size() - n, n, suffix) == 0;
}

bool is_file(const std::string& path) {
  if (path.find('\n') != std::string::npos) {
    return false;  // source text, not a path
  }
  std::ifstream probe(path, std::ios::binary);
  return probe.good();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TORCH_CHECK(in.good(), "mps_ops: cannot open ", path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  TORCH_CHECK(!in.bad(), "mps_ops: cannot read ", path);
  return bytes.str();
}

class MetalBackend final : public Backend {
 public:
  const char* name() const override {
    return "metal";
  }
  c10::DeviceType device_type() const override {
    return c10::DeviceType::MPS;
  }

  // A built-in kernel: its library is loaded or compiled on first use.
  KernelHandle* find_kernel(const std::string& host_name) override {
    return builtins_.find_kernel(host_name);
  }

  // compile_shader / load_metallib: path_or_source is a path to a .metallib
  // (loaded as is) or a .metal file (compiled), or else MSL source (compiled;
  // it may #include only Metal's headers). The library lives for the process;
  // the returned handle is a MetalLibrary*.
  void* load_library(const std::string& path_or_source) override {
    {
      // One library per distinct source or path: compiling again would only
      // cost time and keep a second copy alive.
      std::lock_guard<std::mutex> lock(mutex_);
      auto cached = libraries_by_input_.find(path_or_source);
      if (cached != libraries_by_input_.end()) {
        return cached->second.get();
      }
    }
    std::shared_ptr<MetalLibrary> library;
    if (ends_with(path_or_source, ".metallib") && is_file(path_or_source)) {
      const std::string bytes = read_file(path_or_source);
      library = MetalLibrary::from_metallib(bytes.data(), bytes.size(), path_or_source);
    } else if (ends_with(path_or_source, ".metal") && is_file(path_or_source)) {
      library = MetalLibrary::from_source(read_file(path_or_source), path_or_source);
    } else {
      library = MetalLibrary::from_source(path_or_source, "compile_shader");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    runtime_libraries_.push_back(library);
    libraries_by_input_.emplace(path_or_source, library);
    return library.get();
  }

  // load_metallib(bytes): the image is copied; the library lives for the process.
  void* load_metallib(const void* data, size_t size) override {
    auto library = MetalLibrary::from_metallib(data, size, "load_metallib");
    std::lock_guard<std::mutex> lock(mutex_);
    runtime_libraries_.push_back(library);
    return library.get();
  }

  // A shared-storage buffer: Apple GPUs and the CPU see the same memory,
  // coherent at command buffer boundaries, so the host reads a kernel's
  // flag once the stream's work is complete, with no blit to copy it out.
  // +1 from new..., never released (kept for the process, like the backend).
  HostVisible allocate_host_visible(size_t bytes) override {
    id<MTLDevice> device = torch_mps::device();
    TORCH_CHECK(device != nil, "mps_ops: no Metal device for kernel flags");
    id<MTLBuffer> buffer = [device newBufferWithLength:static_cast<NSUInteger>(bytes)
                                               options:MTLResourceStorageModeShared];
    TORCH_CHECK(buffer != nil, "mps_ops: Metal gave no shared buffer of ", bytes, " bytes for kernel flags");
    std::memset([buffer contents], 0, bytes);
    return HostVisible{torch_mps::buffer_storage(buffer), [buffer contents]};
  }

  // PyTorch's stream commits its command buffer and waits for it, inside the
  // stream's serial queue as every encode on it (commit_and_wait). The done
  // word is not needed: the command buffer's completion is what the stream
  // waits on.
  void wait_for_gpu(const DoneWord&) override {
    torch_mps::commit_and_wait(torch_mps::current_stream());
  }

  // The word is set when the command buffer now being encoded completes,
  // which is only after something commits it: PyTorch at its next sync, or
  // wait_until_marked.
  const void* mark_when_done(const DoneWord& done) override {
    torch_mps::Stream* stream = torch_mps::current_stream();
    torch_mps::set_when_completed(stream, const_cast<int32_t*>(done.host));
    return stream;
  }

  // The marked stream's wait (whichever stream is current now: 2.15 has one
  // per thread, and torch.mps.stream switches it) returns once the buffer
  // completes; Metal may call its completed handlers a moment later, and the
  // word must be set before its slot is reused (Backend::mark_when_done).
  void wait_until_marked(const DoneWord& done, const void* stream) override {
    torch_mps::commit_and_wait(static_cast<torch_mps::Stream*>(const_cast<void*>(stream)));
    while (__atomic_load_n(done.host, __ATOMIC_ACQUIRE) == 0) {
      std::this_thread::yield();
    }
  }

  // The C ABI's run_command_block. Every dispatch binds its arguments and
  // encodes inside the current stream's queue by itself, in call order, so fn
  // runs on the calling thread, outside the queue. Running fn inside it (as
  // AOTI's shim does, whose setArg encodes at once) would make any torch MPS
  // op in fn dispatch_sync onto the queue this thread holds, which never
  // returns; here such ops work as anywhere else.
  void run_command_block(void (*fn)(void*), void* context) override {
    fn(context);
  }

  std::vector<std::string> library_kernel_names(void* library) override {
    TORCH_CHECK(library != nullptr, "mps_ops: no library");
    return static_cast<MetalLibrary*>(library)->function_names();
  }

  KernelHandle* find_library_kernel(void* library, const std::string& name) override {
    TORCH_CHECK(library != nullptr, "mps_ops: no library");
    return static_cast<MetalLibrary*>(library)->find_kernel(name);
  }

  const char* kernel_name(const KernelHandle* kernel) const override {
    return kernel->name.c_str();
  }

  uint32_t max_threads_per_group(const KernelHandle* kernel) const override {
    return kernel->max_threads;
  }

  void dispatch(const KernelHandle* kernel, const ArgSlot* args, int count,
                const uint32_t* threadgroup_lengths, Dim3 threads, Dim3 group) override {
    TORCH_CHECK(kernel != nullptr, "mps_ops: dispatch without a kernel");
    TORCH_CHECK(count >= 0 && count <= max_kernel_args, "mps_ops: ", kernel->name, ": ", count,
                " arguments, Metal's buffer table has ", max_kernel_args);
    const uint64_t group_threads = uint64_t(group.x) * group.y * group.z;
    TORCH_CHECK(group.x >= 1 && group.y >= 1 && group.z >= 1 &&
                    group_threads <= kernel->max_threads,
                "mps_ops: ", kernel->name, ": threadgroup size (", group.x, ", ", group.y, ", ",
                group.z, ") must be between 1 and ", kernel->max_threads,
                " threads (the pipeline's maxTotalThreadsPerThreadgroup)");
    for (int i = 0; i < count; ++i) {
      TORCH_CHECK(!args[i].bound || args[i].inline_data == nullptr ||
                      args[i].bytes <= max_inline_bytes,
                  "mps_ops: ", kernel->name, ": argument ", i, " has ", args[i].bytes,
                  " inline bytes; setBytes takes at most ", max_inline_bytes);
    }
    // [[threadgroup(N)]] lengths, rounded up to Metal's 16-byte granule.
    uint64_t threadgroup_bytes = kernel->static_threadgroup_bytes;
    if (threadgroup_lengths != nullptr) {
      for (int i = 0; i < max_kernel_args; ++i) {
        threadgroup_bytes += round_up_threadgroup_length(threadgroup_lengths[i]);
      }
    }
    TORCH_CHECK(threadgroup_bytes <= kernel->max_threadgroup_bytes, "mps_ops: ", kernel->name,
                ": ", threadgroup_bytes, " bytes of threadgroup memory exceed the device's ",
                kernel->max_threadgroup_bytes);
    if (threads.x == 0 || threads.y == 0 || threads.z == 0) {
      return;  // an empty grid is a Metal validation error, not a no-op
    }
    // Skipping an unbound slot would leave the previous kernel's binding on
    // the shared encoder: the kernel would silently read another tensor.
    // (After the empty-grid return, where the emulator checks too.)
    check_declared_slots(kernel->name.c_str(), kernel->slots.buffers, kernel->slots.threadgroups,
                         args, count, threadgroup_lengths);
    torch_mps::Stream* stream = torch_mps::current_stream();  // PyTorch's, process lifetime
    torch_mps::run_serially(torch_mps::serial_queue(stream), [&] {
      // Borrowed from the stream, valid inside its queue until the stream ends
      // it; shared with PyTorch's own kernels (kernel coalescing).
      id<MTLComputeCommandEncoder> encoder = torch_mps::compute_encoder(stream);
      TORCH_CHECK(encoder != nil, "mps_ops: the MPS stream gave no compute encoder");
      [encoder setComputePipelineState:kernel->pipeline];
      for (int i = 0; i < count; ++i) {
        const ArgSlot& arg = args[i];
        if (!arg.bound) {
          continue;
        }
        if (arg.inline_data != nullptr) {
          // Copied into the command stream by Metal now. An empty table (a
          // 0-dim operand's sizes) goes as 4 zero bytes, which its kernel
          // never reads: Metal's validation may refuse a length of 0.
          static const uint32_t empty_table = 0;
          const bool empty = arg.bytes == 0;
          [encoder setBytes:(empty ? &empty_table : arg.inline_data)
                     length:(empty ? sizeof(empty_table) : arg.bytes)
                    atIndex:static_cast<NSUInteger>(i)];
        } else {
          // Borrowed: the tensor's storage owns the buffer. Keeping it (or its
          // reuse) ordered after this command is PyTorch's allocator's job, as
          // for PyTorch's own kernels on this stream.
          [encoder setBuffer:torch_mps::storage_buffer(arg.storage)
                      offset:arg.offset
                     atIndex:static_cast<NSUInteger>(i)];
        }
      }
      if (threadgroup_lengths != nullptr) {
        for (int i = 0; i < max_kernel_args; ++i) {
          if (threadgroup_lengths[i] > 0) {
            [encoder setThreadgroupMemoryLength:round_up_threadgroup_length(threadgroup_lengths[i])
                                        atIndex:static_cast<NSUInteger>(i)];
          }
        }
      }
      [encoder dispatchThreads:MTLSizeMake(threads.x, threads.y, threads.z)
          threadsPerThreadgroup:MTLSizeMake(group.x, group.y, group.z)];
    });
  }

 private:
  // The backend is created, and MPS_OPS_METAL_FROM_SOURCE read, when
  // `import mps_ops` asks for the backend's name. Nothing is loaded yet.
  BuiltinLibraries builtins_{embedded_kernels(), force_source_requested()};
  std::mutex mutex_;
  // Libraries loaded at run time; kept for the process, as their kernel
  // handles may be cached anywhere.
  std::vector<std::shared_ptr<MetalLibrary>> runtime_libraries_;
  std::map<std::string, std::shared_ptr<MetalLibrary>> libraries_by_input_;
};

}  // namespace

Backend& metal_backend() {
  // Never destroyed: Metal objects are not released during static
  // destruction, when PyTorch's MPS device may already be gone.
  static MetalBackend* instance = new MetalBackend();
  return *instance;
}

}  // namespace mps_ops
