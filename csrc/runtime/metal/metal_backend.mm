// The Metal backend: the project's only Objective-C++.
//
// Libraries come from the bytes the build embedded (see metal_backend.h for
// the symbols); kernels are found by host name and dispatched on PyTorch's
// current MPS stream, inside its serial queue, on its shared compute encoder,
// with dispatchThreads semantics. We never create an encoder or a command
// buffer and never commit: PyTorch commits the stream when it synchronizes,
// exactly as for its own Metal kernels.
//
// Memory: manual retain/release, as PyTorch's MPS code (this file refuses to
// build under ARC). Every Objective-C object below says who owns it and until
// when. Methods of the new/alloc/copy families return +1 references that we
// own; everything else is borrowed or autoreleased, and each Objective-C call
// that may autorelease runs inside an @autoreleasepool, because the calling
// thread (Python's) has no pool of its own.

#include "metal_backend.h"

#include "torch_mps_adapter.h"

#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#include <dispatch/dispatch.h>

#include <c10/util/Exception.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#if __has_feature(objc_arc)
#error "metal_backend.mm uses manual retain/release, like PyTorch's MPS code: build it without -fobjc-arc"
#endif

// Defined by the generated C++ file the build links in (tools/macos_build.py);
// exactly one of the two forms is non-empty. See metal_backend.h.
extern "C" {
extern const unsigned char mps_ops_metallib[];
extern const size_t mps_ops_metallib_size;
extern const char* const mps_ops_kernel_sources[];
extern const char* const mps_ops_kernel_source_names[];
extern const size_t mps_ops_kernel_source_count;
}

namespace mps_ops {

// One compute pipeline. Owned by the MetalLibrary that built it (its kernel
// map); lives as long as that library.
struct KernelHandle {
  KernelHandle(id<MTLComputePipelineState> pipeline_, std::string name_)
      : pipeline(pipeline_),
        name(std::move(name_)),
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
  // The pipeline's maxTotalThreadsPerThreadgroup: depends on the kernel's
  // register use, so it can be below the device's 1024.
  uint32_t max_threads;
  // Threadgroup memory the kernel declares statically, and the device's
  // limit on static plus setThreadgroupMemoryLength bytes (32 KiB on Apple GPUs).
  size_t static_threadgroup_bytes;
  size_t max_threadgroup_bytes;
};

namespace {

// Metal's limit on setBytes payloads.
constexpr size_t max_inline_bytes = 4096;

// setThreadgroupMemoryLength takes multiples of 16 bytes.
constexpr uint64_t threadgroup_length_granule = 16;

// Copies an NSError's text out (call inside the @autoreleasepool that holds
// the autoreleased error).
std::string describe(NSError* error) {
  if (error == nil) {
    return "no error description";
  }
  const char* text = error.localizedDescription.UTF8String;
  return text ? std::string(text) : std::string("no error description");
}

id<MTLDevice> require_device() {
  id<MTLDevice> device = torch_mps::device();  // borrowed from PyTorch
  TORCH_CHECK(device != nil,
              "mps_ops: no Metal device (torch.backends.mps.is_available() is False)");
  return device;
}

// Fast math off: MTLMathModeSafe with precise float functions where the SDK
// and the OS have mathMode (macOS 15), fastMathEnabled = NO before. The
// offline build passes -fno-fast-math to match (tools/macos_build.py).
void set_safe_math(MTLCompileOptions* options) {
#if defined(__MAC_15_0)
  if (@available(macOS 15.0, *)) {
    options.mathMode = MTLMathModeSafe;
    options.mathFloatingPointFunctions = MTLMathFloatingPointFunctionsPrecise;
    return;
  }
#endif
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
  options.fastMathEnabled = NO;
#pragma clang diagnostic pop
}

NSUInteger round_up_threadgroup_length(uint32_t length) {
  return static_cast<NSUInteger>((uint64_t(length) + threadgroup_length_granule - 1) /
                                 threadgroup_length_granule * threadgroup_length_granule);
}

}  // namespace

struct MetalLibrary::Impl {
  Impl(id<MTLLibrary> library_, std::string label_)
      : library(library_), label(std::move(label_)) {}
  ~Impl() {
    kernels.clear();  // pipelines first, then the library they came from
    [library release];
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // +1 reference from newLibraryWithData/newLibraryWithSource, owned here and
  // released by the destructor.
  id<MTLLibrary> library;
  std::string label;
  std::mutex mutex;
  // Host name -> pipeline; nullptr records a name the library lacks, so a
  // miss is looked up in Metal once.
  std::unordered_map<std::string, std::unique_ptr<KernelHandle>> kernels;
};

MetalLibrary::MetalLibrary(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MetalLibrary::~MetalLibrary() = default;

const std::string& MetalLibrary::label() const {
  return impl_->label;
}

std::shared_ptr<MetalLibrary> MetalLibrary::from_metallib(const void* bytes, size_t size,
                                                          const std::string& label) {
  TORCH_CHECK(bytes != nullptr && size > 0, "mps_ops: metallib '", label, "' is empty");
  id<MTLDevice> device = require_device();
  id<MTLLibrary> library = nil;  // +1 when set; handed to Impl below
  std::string message;
  @autoreleasepool {
    // dispatch_data_create with the default destructor copies the bytes now:
    // the caller's buffer need not outlive anything. +1, released right after
    // Metal has built the library (Metal retains what it keeps).
    dispatch_data_t data =
        dispatch_data_create(bytes, size, nullptr, DISPATCH_DATA_DESTRUCTOR_DEFAULT);
    if (data == nullptr) {
      message = "cannot copy " + std::to_string(size) + " bytes";
    } else {
      NSError* error = nil;  // autoreleased by Metal; read inside this pool
      library = [device newLibraryWithData:data error:&error];
      dispatch_release(data);
      if (library == nil) {
        message = describe(error);
      }
    }
  }
  TORCH_CHECK(library != nil, "mps_ops: Metal cannot load metallib '", label, "': ", message);
  @autoreleasepool {
    library.label = [NSString stringWithUTF8String:label.c_str()];  // copied by Metal
  }
  return std::shared_ptr<MetalLibrary>(
      new MetalLibrary(std::make_unique<Impl>(library, label)));
}

std::shared_ptr<MetalLibrary> MetalLibrary::from_source(const std::string& source,
                                                        const std::string& label) {
  id<MTLDevice> device = require_device();
  id<MTLLibrary> library = nil;  // +1 when set; handed to Impl below
  std::string message;
  if (@available(macOS 14.0, *)) {
    @autoreleasepool {
      // +1 from alloc/init; released below, after the compile.
      MTLCompileOptions* options = [[MTLCompileOptions alloc] init];
      options.languageVersion = MTLLanguageVersion3_1;
      set_safe_math(options);
      // Autoreleased, lives until the pool drains.
      NSString* text = [NSString stringWithUTF8String:source.c_str()];
      if (text == nil) {
        message = "the source is not valid UTF-8";
      } else {
        NSError* error = nil;  // autoreleased; may hold warnings even on success
        library = [device newLibraryWithSource:text options:options error:&error];
        if (library == nil) {
          message = describe(error);
        }
      }
      [options release];
    }
  } else {
    message = "runtime compilation needs macOS 14 or newer (Metal Shading Language 3.1)";
  }
  TORCH_CHECK(library != nil, "mps_ops: Metal failed to compile '", label, "':\n", message);
  @autoreleasepool {
    library.label = [NSString stringWithUTF8String:label.c_str()];
  }
  return std::shared_ptr<MetalLibrary>(
      new MetalLibrary(std::make_unique<Impl>(library, label)));
}

KernelHandle* MetalLibrary::find_kernel(const std::string& name) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto cached = impl_->kernels.find(name);
  if (cached != impl_->kernels.end()) {
    return cached->second.get();
  }
  std::unique_ptr<KernelHandle> handle;
  bool present = false;
  std::string message;
  @autoreleasepool {
    NSString* function_name = [NSString stringWithUTF8String:name.c_str()];  // autoreleased
    // +1 from newFunctionWithName; released once the pipeline is built.
    id<MTLFunction> function =
        function_name ? [impl_->library newFunctionWithName:function_name] : nil;
    if (function != nil) {
      present = true;
      NSError* error = nil;  // autoreleased
      // +1; ownership moves into the KernelHandle.
      id<MTLComputePipelineState> pipeline =
          [impl_->library.device newComputePipelineStateWithFunction:function error:&error];
      [function release];
      if (pipeline != nil) {
        handle = std::make_unique<KernelHandle>(pipeline, name);
      } else {
        message = describe(error);
      }
    }
  }
  TORCH_CHECK(!present || handle, "mps_ops: Metal cannot build the compute pipeline of ", name,
              " (library '", impl_->label, "'): ", message);
  KernelHandle* raw = handle.get();
  impl_->kernels.emplace(name, std::move(handle));
  return raw;
}

std::vector<std::string> MetalLibrary::function_names() const {
  std::vector<std::string> names;
  @autoreleasepool {
    NSArray<NSString*>* all = impl_->library.functionNames;  // autoreleased or borrowed
    const NSUInteger n = all.count;
    names.reserve(n);
    for (NSUInteger i = 0; i < n; ++i) {
      const char* text = [all objectAtIndex:i].UTF8String;
      names.emplace_back(text ? text : "");
    }
  }
  return names;
}

namespace {

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

  KernelHandle* find_kernel(const std::string& host_name) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto cached = by_name_.find(host_name);
    if (cached != by_name_.end()) {
      return cached->second;
    }
    load_builtin_libraries();
    KernelHandle* found = nullptr;
    for (const auto& library : libraries_) {
      found = library->find_kernel(host_name);
      if (found != nullptr) {
        break;
      }
    }
    by_name_.emplace(host_name, found);
    return found;
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
    torch_mps::Stream* stream = torch_mps::current_stream();  // PyTorch's, process lifetime
    TORCH_CHECK(stream != nullptr, "mps_ops: PyTorch has no current MPS stream");
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
          // Copied into the command stream by Metal now.
          [encoder setBytes:arg.inline_data length:arg.bytes atIndex:static_cast<NSUInteger>(i)];
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
  // The kernels compiled into the extension, loaded (or compiled) on the first
  // lookup. On failure nothing is kept and the next lookup raises again.
  void load_builtin_libraries() {
    if (loaded_) {
      return;
    }
    std::vector<std::shared_ptr<MetalLibrary>> libraries;
    if (mps_ops_metallib_size > 0) {
      libraries.push_back(
          MetalLibrary::from_metallib(mps_ops_metallib, mps_ops_metallib_size, "mps_ops.metallib"));
    } else {
      TORCH_CHECK(mps_ops_kernel_source_count > 0,
                  "mps_ops: this build embedded neither a metallib nor kernel sources");
      for (size_t i = 0; i < mps_ops_kernel_source_count; ++i) {
        libraries.push_back(
            MetalLibrary::from_source(mps_ops_kernel_sources[i], mps_ops_kernel_source_names[i]));
      }
    }
    libraries_ = std::move(libraries);
    loaded_ = true;
  }

  std::mutex mutex_;
  bool loaded_ = false;
  std::vector<std::shared_ptr<MetalLibrary>> libraries_;
  // Host name -> kernel (nullptr: no library has it). Handles are owned by
  // the libraries, which this backend keeps for the process.
  std::unordered_map<std::string, KernelHandle*> by_name_;
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
