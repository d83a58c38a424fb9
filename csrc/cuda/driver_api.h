// The few CUDA driver API entry points the CUDA backend calls, resolved at run
// time from libcuda.so.1 (dlopen/dlsym) so that nothing links CUDA at build
// time and the backend compiles where no CUDA toolkit is installed.
//
// The types and enumerators are declared here from NVIDIA's CUDA Driver API
// reference (docs.nvidia.com/cuda/cuda-driver-api: "Data types used by CUDA
// driver", "Module Management", "Execution Control", "Primary Context
// Management", "Error Handling"); the values are the ABI and never change.
// tools/check_cuda_backend.py compiles this header against the toolkit's
// cuda.h where one is installed and asserts every value and signature equal.
#pragma once

#include <cstddef>
#include <string>

namespace mps_ops::cuda_driver {

// Opaque handles (cuda.h: struct CUctx_st* CUcontext, ...).
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
using CUdevice = int;

// CUresult: 0 is CUDA_SUCCESS; every other value is an error that
// cuGetErrorName/cuGetErrorString describe.
using CUresult = int;
constexpr CUresult CUDA_SUCCESS = 0;
// cuStreamQuery's answer while work is still in flight.
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
// cuStreamWriteValue32's where the device or the address cannot take it.
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;

// CUfunction_attribute (cuFuncGetAttribute / cuFuncSetAttribute).
enum CUfunction_attribute : int {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

// CUjit_option (cuModuleLoadDataEx): the PTX JIT's error log.
enum CUjit_option : int {
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

// Signatures as cuda.h declares them (CUDAAPI is empty on Linux). The
// symbol names are the unversioned ones, except cuMemcpyHtoDAsync and
// cuMemHostGetDevicePointer, which cuda.h maps to their _v2 symbols (the ones
// with a 64-bit CUdeviceptr).
using cuInit_t = CUresult (*)(unsigned int flags);
using cuDeviceGet_t = CUresult (*)(CUdevice* device, int ordinal);
using cuDevicePrimaryCtxRetain_t = CUresult (*)(CUcontext* context, CUdevice device);
using cuCtxGetCurrent_t = CUresult (*)(CUcontext* context);
using cuCtxSetCurrent_t = CUresult (*)(CUcontext context);
using cuModuleLoadDataEx_t = CUresult (*)(CUmodule* module, const void* image, unsigned int count,
                                          CUjit_option* options, void** values);
using cuModuleGetFunction_t = CUresult (*)(CUfunction* function, CUmodule module, const char* name);
using cuFuncGetAttribute_t = CUresult (*)(int* value, CUfunction_attribute attribute,
                                          CUfunction function);
using cuFuncSetAttribute_t = CUresult (*)(CUfunction function, CUfunction_attribute attribute,
                                          int value);
using cuLaunchKernel_t = CUresult (*)(CUfunction function, unsigned int grid_x, unsigned int grid_y,
                                      unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                                      unsigned int block_z, unsigned int shared_bytes, CUstream stream,
                                      void** params, void** extra);
using cuStreamSynchronize_t = CUresult (*)(CUstream stream);
using cuStreamQuery_t = CUresult (*)(CUstream stream);
using CUdeviceptr = unsigned long long;
// A 32-bit store in stream order (mark_when_done). Flags
// (CUstreamWriteValue_flags): the default fences the stream's earlier
// writes before the store, so whoever sees the value sees them too.
enum CUstreamWriteValue_flags : int {
  CU_STREAM_WRITE_VALUE_DEFAULT = 0,
};
using cuStreamWriteValue32_t = CUresult (*)(CUstream stream, CUdeviceptr address, unsigned int value,
                                            unsigned int flags);
// The symbol cuda.h's cuStreamWriteValue32 macro names.
constexpr const char* cuStreamWriteValue32_symbol = "cuStreamWriteValue32_v2";
using cuMemcpyHtoDAsync_t = CUresult (*)(CUdeviceptr destination, const void* source, size_t bytes,
                                         CUstream stream);
// The symbol cuda.h's cuMemcpyHtoDAsync macro names.
constexpr const char* cuMemcpyHtoDAsync_symbol = "cuMemcpyHtoDAsync_v2";
// Host memory the GPU reads and writes in place (KernelFlag's words):
// cuMemHostAlloc's flags (cuda.h's CU_MEMHOSTALLOC_PORTABLE and
// CU_MEMHOSTALLOC_DEVICEMAP, macros there, hence other names here).
constexpr unsigned int memhostalloc_portable = 0x01;
constexpr unsigned int memhostalloc_devicemap = 0x02;
using cuMemHostAlloc_t = CUresult (*)(void** host, size_t bytes, unsigned int flags);
using cuMemHostGetDevicePointer_t = CUresult (*)(CUdeviceptr* device, void* host, unsigned int flags);
// The symbol cuda.h's cuMemHostGetDevicePointer macro names.
constexpr const char* cuMemHostGetDevicePointer_symbol = "cuMemHostGetDevicePointer_v2";
using cuGetErrorName_t = CUresult (*)(CUresult error, const char** name);
using cuGetErrorString_t = CUresult (*)(CUresult error, const char** text);

struct Driver {
  cuInit_t cuInit;
  cuDeviceGet_t cuDeviceGet;
  cuDevicePrimaryCtxRetain_t cuDevicePrimaryCtxRetain;
  cuCtxGetCurrent_t cuCtxGetCurrent;
  cuCtxSetCurrent_t cuCtxSetCurrent;
  cuModuleLoadDataEx_t cuModuleLoadDataEx;
  cuModuleGetFunction_t cuModuleGetFunction;
  cuFuncGetAttribute_t cuFuncGetAttribute;
  cuFuncSetAttribute_t cuFuncSetAttribute;
  cuLaunchKernel_t cuLaunchKernel;
  cuStreamSynchronize_t cuStreamSynchronize;
  cuStreamQuery_t cuStreamQuery;
  cuStreamWriteValue32_t cuStreamWriteValue32;
  cuMemcpyHtoDAsync_t cuMemcpyHtoDAsync;
  cuMemHostAlloc_t cuMemHostAlloc;
  cuMemHostGetDevicePointer_t cuMemHostGetDevicePointer;
  cuGetErrorName_t cuGetErrorName;
  cuGetErrorString_t cuGetErrorString;
};

// libcuda.so.1, loaded and initialised (cuInit) on the first call; raises
// c10::Error naming what is missing (no driver, a symbol, cuInit failing).
const Driver& driver();

// "CUDA_ERROR_X (text)" for an error code, for messages.
std::string describe(CUresult error);

// Raises c10::Error "mps_ops cuda: <what>: <describe(result)>" unless result
// is CUDA_SUCCESS.
void check(CUresult result, const std::string& what);

}  // namespace mps_ops::cuda_driver
