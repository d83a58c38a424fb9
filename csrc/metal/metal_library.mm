// MetalLibrary (metal_backend.h): one MTLLibrary, loaded from a metallib
// image or compiled from MSL, and the compute pipelines built from it.
//
// Memory: manual retain/release, as PyTorch's MPS code (this file refuses to
// build under ARC). Every Objective-C object below says who owns it and until
// when. Methods of the new/alloc/copy families return +1 references that we
// own; everything else is borrowed or autoreleased, and each Objective-C call
// that may autorelease runs inside an @autoreleasepool, because the calling
// thread (Python's) has no pool of its own.

#include "metal_backend.h"

#include "metal_kernel.h"
#include "torch_mps_adapter.h"

#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#include <dispatch/dispatch.h>

#include <c10/util/Exception.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#if __has_feature(objc_arc)
#error "metal_library.mm uses manual retain/release, like PyTorch's MPS code: build it without -fobjc-arc"
#endif

namespace mps_ops {

namespace {

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

// The buffer and threadgroup-memory slots a pipeline's function declares, from
// its reflection (call inside the pool that holds the autoreleased reflection).
// Every binding counts, used or not: the emulator requires the same of the
// kernels it runs.
API_AVAILABLE(macos(13.0))
KernelSlots reflected_slots(MTLComputePipelineReflection* reflection) {
  KernelSlots slots;
  NSArray<id<MTLBinding>>* bindings = reflection.bindings;  // borrowed from the reflection
  const NSUInteger n = bindings.count;
  for (NSUInteger i = 0; i < n; ++i) {
    id<MTLBinding> binding = [bindings objectAtIndex:i];
    if (binding.index >= static_cast<NSUInteger>(max_kernel_args)) {
      continue;  // not an argument table slot we can set
    }
    const uint32_t bit = uint32_t(1) << binding.index;
    if (binding.type == MTLBindingTypeBuffer) {
      slots.buffers |= bit;
    } else if (binding.type == MTLBindingTypeThreadgroupMemory) {
      slots.threadgroups |= bit;
    }
  }
  return slots;
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
  return lookup(name, nullptr);
}

KernelHandle* MetalLibrary::find_kernel(const std::string& name, KernelSlots declared) {
  return lookup(name, &declared);
}

KernelHandle* MetalLibrary::lookup(const std::string& name, const KernelSlots* declared) {
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
      id<MTLDevice> device = impl_->library.device;  // borrowed from the library
      NSError* error = nil;                          // autoreleased
      // +1; ownership moves into the KernelHandle.
      id<MTLComputePipelineState> pipeline = nil;
      KernelSlots slots;
      if (declared != nullptr) {
        // A built-in kernel: the build recorded its slots.
        slots = *declared;
        pipeline = [device newComputePipelineStateWithFunction:function error:&error];
      } else if (@available(macOS 13.0, *)) {
        // A library loaded at run time (compile_shader, load_metallib, the C
        // ABI): the slots come from the pipeline's reflection.
        MTLComputePipelineReflection* reflection = nil;  // autoreleased; read in this pool
        pipeline = [device newComputePipelineStateWithFunction:function
                                                       options:MTLPipelineOptionBindingInfo
                                                    reflection:&reflection
                                                         error:&error];
        if (pipeline != nil && reflection != nil) {
          slots = reflected_slots(reflection);
        }
      } else {
        // No bindings API before macOS 13 (which cannot run our MSL 3.1
        // anyway): no slot check for such a kernel.
        pipeline = [device newComputePipelineStateWithFunction:function error:&error];
      }
      [function release];
      if (pipeline != nil) {
        handle = std::make_unique<KernelHandle>(pipeline, name, slots);
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

}  // namespace mps_ops
