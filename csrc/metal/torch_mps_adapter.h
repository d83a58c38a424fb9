// Everything the Metal backend takes from PyTorch's internal MPS headers, in
// one place. Objective-C++ only (included by the .mm files alone).
//
// What we use, and how it reads across torch releases (compared header by
// header in the macOS wheels of 2.9.1, 2.13.0 and 2.15.0; .ci/run type-checks
// against 2.9.1 and 2.15.0):
//
//   at::mps::getCurrentMPSStream()          same in all three
//   MPSStream::queue()                      same (dispatch_queue_t)
//   MPSStream::commandEncoder()             same (MTLComputeCommandEncoder_t,
//                                           a typedef of id<MTLComputeCommandEncoder>);
//                                           2.15 documents it: call it from a block
//                                           running on queue(), the encoder is valid
//                                           for the rest of that block
//   at::mps::MPSDevice::getInstance()->device()   same
//   MPSStream::synchronize(SyncType::COMMIT_AND_WAIT)  same
//   MPSStream::addCompletedHandler(MTLCommandBufferHandler)  same (it enters
//                                           the stream's queue itself)
//   storage data pointer == id<MTLBuffer>   same (torch's getMTLBufferStorage)
//
// Where they differ, and why we do not depend on it:
//   - dispatch_sync_with_rethrow is declared in at::native::mps
//     (ATen/native/mps/OperationUtils.h) in 2.9 and in at::mps
//     (ATen/mps/MPSStream.h) from 2.13, without TORCH_API in either. We use our
//     own run_serially() below instead of either spelling. PyTorch's callers
//     wrap the block's work in @autoreleasepool (OperationUtils.h, e.g.
//     MetalShaderLibrary::exec_binary_kernel_with_params in 2.15);
//     run_serially does the same.
//   - 2.9's MPSStream.h imports Foundation itself; later ones rely on Metal.h.
//     We import Foundation ourselves.
//   - MPSStream::fill is gone after 2.9, getErrorBuffer/checkLastError are new
//     in 2.13; none is used here.
//   - 2.15 makes the current stream per thread (setCurrentMPSStream, a pool of
//     streams, each with its own queue); calling getCurrentMPSStream() on every
//     dispatch follows that without change, and the re-entry marker below is
//     set per queue.
#pragma once

#if !defined(__OBJC__)
#error "torch_mps_adapter.h is Objective-C++ (include it from the .mm files only)"
#endif

#include <torch/version.h>

#if !defined(TORCH_VERSION_MAJOR) || !defined(TORCH_VERSION_MINOR)
#error "torch/version.h did not define TORCH_VERSION_MAJOR/MINOR"
#endif
#if TORCH_VERSION_MAJOR < 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 9)
#error "mps_ops' Metal backend needs torch >= 2.9 (MPSStream::commandEncoder, macOS 14 SDK era headers)"
#endif

#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#include <dispatch/dispatch.h>

#include <ATen/mps/MPSDevice.h>
#include <ATen/mps/MPSStream.h>
#include <c10/util/Exception.h>

#include <exception>
#include <optional>
#include <string>

namespace mps_ops::torch_mps {

using Stream = at::mps::MPSStream;

// The stream PyTorch's own MPS kernels encode on right now. Owned by PyTorch,
// lives for the process.
inline Stream* current_stream() {
  Stream* stream = at::mps::getCurrentMPSStream();
  TORCH_CHECK(stream != nullptr, "mps_ops: PyTorch has no current MPS stream");
  return stream;
}

// The device PyTorch allocates MPS tensors on; nil when MPS is unavailable.
// Owned by PyTorch's MPSDevice singleton (we neither retain nor release it).
inline id<MTLDevice> device() {
  return at::mps::MPSDevice::getInstance()->device();
}

// The stream's serial queue: every encode on the stream happens inside it.
inline dispatch_queue_t serial_queue(Stream* stream) {
  return stream->queue();
}

// The stream's shared compute encoder, created by the stream on demand and
// ended by it (endKernelCoalescing, commit). Owned by the stream: we use it
// only inside serial_queue(stream) and never retain, end or release it.
inline id<MTLComputeCommandEncoder> compute_encoder(Stream* stream) {
  return stream->commandEncoder();
}

// An MPS storage's data pointer is its id<MTLBuffer> (PyTorch's MPS allocator
// hands out buffers as data pointers). Borrowed: the tensor owns the buffer.
inline id<MTLBuffer> storage_buffer(const void* storage_data) {
  return __builtin_bit_cast(id<MTLBuffer>, storage_data);
}

// The reverse, for a buffer of our own bound where a storage would be
// (KernelFlag's shared words): ArgSlot::storage carries it the same way.
inline const void* buffer_storage(id<MTLBuffer> buffer) {
  return __builtin_bit_cast(const void*, buffer);
}

// The key under which run_serially marks each stream queue it uses, with the
// queue itself as the value: dispatch_get_specific(key) then tells whether
// this thread is already running a block on that queue, whoever submitted it.
inline const void* on_queue_key() {
  static const char key = 0;
  return &key;
}

// True when the calling thread is inside a block running on queue.
// dispatch_sync onto it from there never returns: Apple documents a deadlock,
// and libdispatch stops the process where it notices ("dispatch_sync called
// on queue already owned by current thread").
inline bool this_thread_runs_on(dispatch_queue_t queue) {
  void* const marker = (__bridge void*)queue;
  if (dispatch_queue_get_specific(queue, on_queue_key()) != marker) {
    // Idempotent (a race sets the same value twice); PyTorch never reads our key.
    dispatch_queue_set_specific(queue, on_queue_key(), marker, nullptr);
  }
  return dispatch_get_specific(on_queue_key()) == marker;
}

// Runs body() synchronously inside queue, and rethrows here whatever it threw:
// a C++ exception as itself, an NSException as c10::Error with its reason.
// Nothing may unwind through dispatch_sync itself. Our code never calls back
// out (into torch or a caller) from body, so only foreign code already on the
// queue can reach here re-entrantly: that is raised, not deadlocked.
template <class F>
void run_serially(dispatch_queue_t queue, const F& body) {
  TORCH_CHECK(!this_thread_runs_on(queue),
              "mps_ops: called from code running on PyTorch's MPS stream queue (inside a block "
              "submitted to it with dispatch_sync or dispatch_async); encoding from there would "
              "deadlock. Call mps_ops operators and C ABI dispatches outside such blocks.");
  std::exception_ptr cxx_failure;
  std::optional<std::string> objc_failure;
  // Blocks capture by value: hand the block pointers to our locals, which
  // outlive it (dispatch_sync returns after the block ran).
  const F* work = &body;
  std::exception_ptr* cxx_slot = &cxx_failure;
  std::optional<std::string>* objc_slot = &objc_failure;
  dispatch_sync(queue, ^{
    // The stream makes its command buffer and compute encoder with factory
    // methods that return autoreleased objects (it retains them for itself),
    // and dispatch_sync runs this block on the calling thread, a Python
    // thread with no pool: without this pool each new encoder (one after
    // every MPSGraph op, copy or sync) would leak its autorelease reference.
    // PyTorch wraps its own encoding the same way (dispatch_sync_with_rethrow
    // around @autoreleasepool, ATen/native/mps/OperationUtils.h). The pool is
    // outermost and the catches inside it, so it drains on failure too: an
    // exception leaving an @autoreleasepool skips the pop (an inner pool left
    // open that way is popped with this one).
    @autoreleasepool {
      try {
        @try {
          (*work)();
        } @catch (NSException* e) {
          const char* reason = e.reason.UTF8String;
          *objc_slot = std::string(e.name.UTF8String ? e.name.UTF8String : "NSException") +
                       ": " + (reason ? reason : "");
        }
      } catch (...) {
        *cxx_slot = std::current_exception();
        if (!*cxx_slot) {
          // A foreign exception that is not an NSException.
          *objc_slot = std::string("an Objective-C exception that is not an NSException");
        }
      }
    }
  });
  if (cxx_failure) {
    std::rethrow_exception(cxx_failure);
  }
  TORCH_CHECK(!objc_failure, "mps_ops: Metal raised ", *objc_failure);
}

// Commits the stream's work and waits for the GPU to finish it, inside the
// stream's queue: its synchronize does not enter the queue itself (PyTorch
// calls it from blocks already on it: its copies, MPSGraph runs, fills), and
// called outside, another thread's encoding on the same stream could have
// its encoder ended and its command buffer committed under it.
inline void commit_and_wait(Stream* stream) {
  run_serially(serial_queue(stream), [stream] { stream->synchronize(at::mps::SyncType::COMMIT_AND_WAIT); });
}

// Has the stream's current command buffer set *word to 1 (release) when it
// completes: Metal runs the handler once the GPU has run the buffer, whose
// shared-storage writes the host then sees. PyTorch's addCompletedHandler
// dispatch_syncs onto the stream's queue itself: called from inside it (in
// run_serially) it would never return, which run_serially's check raises
// instead.
inline void set_when_completed(Stream* stream, int32_t* word) {
  TORCH_CHECK(!this_thread_runs_on(serial_queue(stream)),
              "mps_ops: marking the GPU's progress from code running on PyTorch's MPS stream queue would "
              "deadlock");
  stream->addCompletedHandler(^(id<MTLCommandBuffer>) {
    __atomic_store_n(word, 1, __ATOMIC_RELEASE);
  });
}

}  // namespace mps_ops::torch_mps
