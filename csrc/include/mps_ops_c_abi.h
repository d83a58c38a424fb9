/* mps_ops C ABI: run Metal kernels on PyTorch tensors from C or C++ (for
 * instance AOTInductor-generated code), mirroring the AOTI MPS shim's function
 * set with the prefix mps_ops_, plus set_arg_float and set_arg_bytes.
 *
 * Exported by the mps_ops._C extension. Every function returns MPS_OPS_OK or
 * MPS_OPS_ERROR and never lets an exception cross the boundary;
 * mps_ops_last_error() gives the message of this thread's last call if it
 * failed.
 * On Linux the same calls run kernels on the CPU emulator (CPU tensors) or, in
 * a CUDA build, on the GPU (CUDA tensors). */
#ifndef MPS_OPS_C_ABI_H
#define MPS_OPS_C_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int mps_ops_status;
#define MPS_OPS_OK 0
#define MPS_OPS_ERROR 1

typedef struct mps_ops_library_opaque* mps_ops_library;
typedef struct mps_ops_kernel_opaque* mps_ops_kernel;
/* An at::Tensor* (AOTI's AtenTensorHandle). */
typedef void* mps_ops_tensor;

/* MSL source; compiled (emulator: needs the Python interpreter of the process
 * that loaded mps_ops, for the prepass; CUDA: one of the sources whose PTX was
 * built ahead, found by the same key as compile_shader's, through the same
 * interpreter). */
mps_ops_status mps_ops_create_shader_library(const char* source, mps_ops_library* out);
/* A .metallib image (Metal backend only). */
mps_ops_status mps_ops_load_metallib(const void* data, size_t size, mps_ops_library* out);
/* Invalidates the handle; kernels already taken from it stay usable. */
mps_ops_status mps_ops_delete_shader_library(mps_ops_library library);

mps_ops_status mps_ops_get_kernel_function(mps_ops_library library, const char* name, mps_ops_kernel* out);
mps_ops_status mps_ops_delete_kernel_function(mps_ops_kernel kernel);

/* Clears the bound arguments of kernel. */
mps_ops_status mps_ops_start_encoding(mps_ops_kernel kernel);
mps_ops_status mps_ops_set_arg_tensor(mps_ops_kernel kernel, unsigned index, mps_ops_tensor tensor);
mps_ops_status mps_ops_set_arg_int(mps_ops_kernel kernel, unsigned index, int64_t value);
mps_ops_status mps_ops_set_arg_float(mps_ops_kernel kernel, unsigned index, float value);
mps_ops_status mps_ops_set_arg_bytes(mps_ops_kernel kernel, unsigned index, const void* data, size_t size);

/* The length in bytes of the kernel's [[threadgroup(index)]] argument (Metal's
 * setThreadgroupMemoryLength; an mps_ops extension, as compile_shader's
 * threadgroup_memory=). Cleared by start_encoding. */
mps_ops_status mps_ops_set_threadgroup_memory(mps_ops_kernel kernel, unsigned index, size_t bytes);

/* dispatchThreads over `length` threads (1-D) or lengths[0..n) (1 to 3 dims). */
mps_ops_status mps_ops_dispatch_single(mps_ops_kernel kernel, uint64_t length);
mps_ops_status mps_ops_dispatch_single_with_group_size(mps_ops_kernel kernel, uint64_t length,
                                                       uint64_t group_size);
mps_ops_status mps_ops_dispatch_array(mps_ops_kernel kernel, const uint64_t* lengths, size_t n);
mps_ops_status mps_ops_dispatch_array_with_group_size(mps_ops_kernel kernel, const uint64_t* lengths,
                                                      size_t n, const uint64_t* group_sizes,
                                                      size_t group_n);

/* Runs fn(context) on the calling thread (the AOTI shim's shape). Each dispatch
 * encodes itself on PyTorch's current MPS stream in call order, so fn needs no
 * queue of its own, and torch ops may be called inside it. */
mps_ops_status mps_ops_run_command_block(void (*fn)(void* context), void* context);

/* The message of this thread's last call if it failed, "" after a success
 * (each call sets it). The pointer is valid until this thread's next call. */
const char* mps_ops_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* MPS_OPS_C_ABI_H */
