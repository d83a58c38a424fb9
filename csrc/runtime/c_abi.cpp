// The C ABI (csrc/include/mps_ops_c_abi.h) over the backend interface.
// Handles are ids, never addresses: each object gets the next number of a
// 64-bit counter, so a stale, foreign or reused handle is an error code, not
// a crash or another object. A kernel handle is encoded by one thread at a
// time: each call holds the kernel's lock, and a thread other than the one
// that called start_encoding gets an error instead of interleaved bindings.
#include "../include/mps_ops_c_abi.h"

#include "backend.h"
#include "kernel_function.h"

#include <ATen/core/Tensor.h>
#include <Python.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace mps_ops {
namespace {

thread_local std::string last_error;

struct Library {
  void* backend_library;
};

struct Kernel {
  const KernelHandle* handle;
  std::mutex mutex;  // held for each call on this kernel
  std::unique_ptr<KernelFunction> function;
  std::thread::id encoder;  // the thread that called start_encoding
};

std::mutex handles_mutex;
uint64_t last_id = 0;
std::map<uint64_t, std::shared_ptr<Library>> libraries;
std::map<uint64_t, std::shared_ptr<Kernel>> kernels;

template <class T>
std::shared_ptr<T> lookup(std::map<uint64_t, std::shared_ptr<T>>& table, const void* handle, const char* what) {
  std::lock_guard<std::mutex> lock(handles_mutex);
  const auto found = table.find(reinterpret_cast<uint64_t>(handle));
  TORCH_CHECK(found != table.end(), "mps_ops: invalid ", what, " handle");
  return found->second;  // shared: a concurrent delete cannot free it under us
}

template <class T>
uint64_t track(std::map<uint64_t, std::shared_ptr<T>>& table, std::shared_ptr<T> object) {
  std::lock_guard<std::mutex> lock(handles_mutex);
  table.emplace(++last_id, std::move(object));
  return last_id;
}

template <class T>
void untrack(std::map<uint64_t, std::shared_ptr<T>>& table, const void* handle, const char* what) {
  std::lock_guard<std::mutex> lock(handles_mutex);
  TORCH_CHECK(table.erase(reinterpret_cast<uint64_t>(handle)) == 1, "mps_ops: invalid ", what, " handle");
}

// One line: no C++ backtrace, newlines folded, so callers can log it as is.
std::string one_line(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  return message;
}

template <class F>
mps_ops_status guarded(F&& body) {
  try {
    body();
    last_error.clear();
    return MPS_OPS_OK;
  } catch (const c10::Error& e) {
    last_error = one_line(e.what_without_backtrace());
  } catch (const std::exception& e) {
    last_error = one_line(e.what());
  } catch (...) {
    last_error = "mps_ops: unknown error";
  }
  return MPS_OPS_ERROR;
}

// What the backend's load_library takes for MSL source, as compile_shader
// computes it (mps_ops.shaders._library_input), in the Python interpreter of
// this process: the emulator's library path (its prepass is Python), CUDA's
// shader key. Metal takes the source itself and needs no Python.
std::string library_input(const char* source) {
  const std::string backend_name = backend().name();
  if (backend_name == "metal") {
    return source;
  }
  TORCH_CHECK(Py_IsInitialized(), "mps_ops: a shader on the ", backend_name, " backend needs the Python "
              "interpreter that loaded mps_ops");
  PyGILState_STATE gil = PyGILState_Ensure();
  std::string path, error;
  PyObject* module = PyImport_ImportModule("mps_ops.shaders");
  PyObject* result = module ? PyObject_CallMethod(module, "_library_input", "s", source) : nullptr;
  // PyUnicode_AsUTF8 gives null (and sets an error) for a path it cannot
  // encode (undecodable bytes in the cache directory's name).
  const char* utf8 = result && PyUnicode_Check(result) ? PyUnicode_AsUTF8(result) : nullptr;
  if (utf8 != nullptr) {
    path = utf8;
  } else {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject* text = value ? PyObject_Str(value) : nullptr;
    const char* message = text && PyUnicode_Check(text) ? PyUnicode_AsUTF8(text) : nullptr;
    error = message != nullptr ? message : "shader build failed";
    PyErr_Clear();  // whatever Str or AsUTF8 raised: no error left on the thread
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
  }
  Py_XDECREF(result);
  Py_XDECREF(module);
  PyGILState_Release(gil);
  TORCH_CHECK(error.empty(), "mps_ops: ", error);
  return path;
}

// Runs body(function) holding the kernel's lock, from the encoding thread.
template <class F>
void with_function(mps_ops_kernel kernel, F&& body) {
  const std::shared_ptr<Kernel> k = lookup(kernels, kernel, "kernel");
  std::lock_guard<std::mutex> lock(k->mutex);
  TORCH_CHECK(k->function, "mps_ops: call mps_ops_start_encoding before binding arguments");
  TORCH_CHECK(k->encoder == std::this_thread::get_id(), "mps_ops: this kernel handle is being encoded by ",
              "another thread; use one kernel handle per thread");
  body(*k->function);
}

Dim3 dims_of(const uint64_t* values, size_t n, const char* what) {
  TORCH_CHECK(values != nullptr && n >= 1 && n <= 3, "mps_ops: ", what, " needs 1 to 3 sizes, got ", n);
  uint32_t v[3] = {1, 1, 1};
  for (size_t i = 0; i < n; ++i) {
    TORCH_CHECK(values[i] <= UINT32_MAX, "mps_ops: ", what, " size ", values[i], " exceeds 2**32 - 1");
    v[i] = static_cast<uint32_t>(values[i]);
  }
  return Dim3{v[0], v[1], v[2]};
}

}  // namespace
}  // namespace mps_ops

using namespace mps_ops;

#define MPS_OPS_EXPORT extern "C" __attribute__((visibility("default")))

MPS_OPS_EXPORT mps_ops_status mps_ops_create_shader_library(const char* source, mps_ops_library* out) {
  return guarded([&] {
    TORCH_CHECK(source != nullptr && out != nullptr, "mps_ops: null argument");
    const uint64_t id =
        track(libraries, std::make_shared<Library>(Library{backend().load_library(library_input(source))}));
    *out = reinterpret_cast<mps_ops_library>(id);
  });
}

MPS_OPS_EXPORT mps_ops_status mps_ops_load_metallib(const void* data, size_t size, mps_ops_library* out) {
  return guarded([&] {
    TORCH_CHECK(data != nullptr && out != nullptr, "mps_ops: null argument");
    const uint64_t id = track(libraries, std::make_shared<Library>(Library{backend().load_metallib(data, size)}));
    *out = reinterpret_cast<mps_ops_library>(id);
  });
}

MPS_OPS_EXPORT mps_ops_status mps_ops_delete_shader_library(mps_ops_library library) {
  return guarded([&] {
    untrack(libraries, library, "library");  // the backend's library itself lives for the process
  });
}

MPS_OPS_EXPORT mps_ops_status mps_ops_get_kernel_function(mps_ops_library library, const char* name,
                                                          mps_ops_kernel* out) {
  return guarded([&] {
    TORCH_CHECK(name != nullptr && out != nullptr, "mps_ops: null argument");
    const std::shared_ptr<Library> l = lookup(libraries, library, "library");
    const KernelHandle* handle = backend().find_library_kernel(l->backend_library, name);
    TORCH_CHECK(handle != nullptr, "mps_ops: the library has no kernel named ", name);
    auto kernel = std::make_shared<Kernel>();
    kernel->handle = handle;
    *out = reinterpret_cast<mps_ops_kernel>(track(kernels, std::move(kernel)));
  });
}

MPS_OPS_EXPORT mps_ops_status mps_ops_delete_kernel_function(mps_ops_kernel kernel) {
  return guarded([&] {
    untrack(kernels, kernel, "kernel");
  });
}

MPS_OPS_EXPORT mps_ops_status mps_ops_start_encoding(mps_ops_kernel kernel) {
  return guarded([&] {
    const std::shared_ptr<Kernel> k = lookup(kernels, kernel, "kernel");
    std::lock_guard<std::mutex> lock(k->mutex);
    k->function = std::make_unique<KernelFunction>(k->handle);
    k->encoder = std::this_thread::get_id();
  });
}

MPS_OPS_EXPORT mps_ops_status mps_ops_set_arg_tensor(mps_ops_kernel kernel, unsigned index,
                                                     mps_ops_tensor tensor) {
  return guarded([&] {
    TORCH_CHECK(tensor != nullptr, "mps_ops: null tensor");
    const at::Tensor& t = *static_cast<const at::Tensor*>(tensor);
    TORCH_CHECK(t.device().type() == backend().device_type(), "mps_ops: tensor on ", t.device(),
                ", but the ", backend().name(), " backend runs kernels on ",
                c10::DeviceTypeName(backend().device_type(), true));
    // A zero-element view may start past its storage's end (as_strided checks
    // no bounds then): it gets no bytes, not a wrapped-around size.
    const size_t offset = t.storage_offset() * t.element_size(), stored = t.storage().nbytes();
    with_function(kernel, [&](KernelFunction& f) {
      f.set_buffer(static_cast<int>(index), t, t.const_data_ptr(), offset <= stored ? stored - offset : 0);
    });
  });
}

MPS_OPS_EXPORT mps_ops_status mps_ops_set_arg_int(mps_ops_kernel kernel, unsigned index, int64_t value) {
  return guarded([&] { with_function(kernel, [&](KernelFunction& f) { f.set_bytes(static_cast<int>(index), &value, sizeof(value)); }); });
}

MPS_OPS_EXPORT mps_ops_status mps_ops_set_arg_float(mps_ops_kernel kernel, unsigned index, float value) {
  return guarded([&] { with_function(kernel, [&](KernelFunction& f) { f.set_bytes(static_cast<int>(index), &value, sizeof(value)); }); });
}

MPS_OPS_EXPORT mps_ops_status mps_ops_set_arg_bytes(mps_ops_kernel kernel, unsigned index, const void* data,
                                                    size_t size) {
  return guarded([&] {
    TORCH_CHECK(data != nullptr || size == 0, "mps_ops: null bytes");
    with_function(kernel, [&](KernelFunction& f) { f.set_bytes(static_cast<int>(index), data, size); });
  });
}

MPS_OPS_EXPORT mps_ops_status mps_ops_set_threadgroup_memory(mps_ops_kernel kernel, unsigned index, size_t bytes) {
  return guarded([&] {
    TORCH_CHECK(bytes <= UINT32_MAX, "mps_ops: threadgroup memory of ", bytes, " bytes");
    with_function(kernel, [&](KernelFunction& f) {
      f.set_threadgroup_memory(static_cast<int>(index), static_cast<uint32_t>(bytes));
    });
  });
}

MPS_OPS_EXPORT mps_ops_status mps_ops_dispatch_single(mps_ops_kernel kernel, uint64_t length) {
  return guarded([&] {
    with_function(kernel, [&](KernelFunction& f) { f.dispatch(dims_of(&length, 1, "threads")); });
  });
}

MPS_OPS_EXPORT mps_ops_status mps_ops_dispatch_single_with_group_size(mps_ops_kernel kernel, uint64_t length,
                                                                      uint64_t group_size) {
  return guarded([&] {
    with_function(kernel, [&](KernelFunction& f) {
      f.dispatch(dims_of(&length, 1, "threads"), dims_of(&group_size, 1, "group_size"));
    });
  });
}

MPS_OPS_EXPORT mps_ops_status mps_ops_dispatch_array(mps_ops_kernel kernel, const uint64_t* lengths, size_t n) {
  return guarded([&] {
    with_function(kernel, [&](KernelFunction& f) { f.dispatch(dims_of(lengths, n, "threads")); });
  });
}

MPS_OPS_EXPORT mps_ops_status mps_ops_dispatch_array_with_group_size(mps_ops_kernel kernel,
                                                                     const uint64_t* lengths, size_t n,
                                                                     const uint64_t* group_sizes,
                                                                     size_t group_n) {
  return guarded([&] {
    with_function(kernel, [&](KernelFunction& f) {
      f.dispatch(dims_of(lengths, n, "threads"), dims_of(group_sizes, group_n, "group_size"));
    });
  });
}

MPS_OPS_EXPORT mps_ops_status mps_ops_run_command_block(void (*fn)(void* context), void* context) {
  return guarded([&] {
    TORCH_CHECK(fn != nullptr, "mps_ops: null command block");
    backend().run_command_block(fn, context);
  });
}

MPS_OPS_EXPORT const char* mps_ops_last_error(void) { return last_error.c_str(); }
