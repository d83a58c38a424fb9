// mps_ops._C's compile_shader part: loading libraries (emulator builds or
// MSL source, metallibs on Metal), listing their kernels, and dispatching one
// with torch.mps.compile_shader's calling convention.
#pragma once

#include "interrupt_scope.h"

#include "../runtime/backend.h"
#include "../runtime/kernel_function.h"

#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

namespace mps_ops::python {

// compile_shader's libraries. A library handle is the backend's pointer,
// carried through Python as an integer; libraries are never unloaded.
inline uintptr_t library_load(const std::string& path_or_source) {
  return reinterpret_cast<uintptr_t>(backend().load_library(path_or_source));
}

inline uintptr_t library_load_metallib(const py::bytes& image) {
  const std::string data = image;
  return reinterpret_cast<uintptr_t>(backend().load_metallib(data.data(), data.size()));
}

inline std::vector<std::string> library_kernels(uintptr_t library) {
  return backend().library_kernel_names(reinterpret_cast<void*>(library));
}

// torch.mps.compile_shader's calling convention: arguments bind in order,
// tensors as buffers from their storage offset to the storage's end, Python
// ints as int64, floats as float32, lists as arrays of int64 (all ints) or
// float32.
inline void library_dispatch(uintptr_t library, const std::string& name, const py::list& args,
                      const std::vector<uint32_t>& threads, const std::vector<uint32_t>& group,
                      const std::vector<uint32_t>& threadgroup_memory) {
  KernelHandle* kernel = backend().find_library_kernel(reinterpret_cast<void*>(library), name);
  TORCH_CHECK_VALUE(kernel != nullptr, "mps_ops: the library has no kernel named ", name);
  KernelFunction function(kernel);
  std::vector<at::Tensor> keep_alive;
  for (size_t i = 0; i < args.size(); ++i) {
    py::handle arg = args[i];
    if (THPVariable_Check(arg.ptr())) {
      at::Tensor t = THPVariable_Unpack(arg.ptr());
      TORCH_CHECK(t.device().type() == backend().device_type(), "mps_ops: ", name, ": argument ", i,
                  " is on ", t.device(), ", but the ", backend().name(), " backend runs kernels on ",
                  c10::DeviceTypeName(backend().device_type(), true));
      const size_t offset = t.storage_offset() * t.element_size();
      function.bind(BufferSpan{t, t.const_data_ptr(), t.storage().nbytes() - offset});
      keep_alive.push_back(std::move(t));
    } else if (PyBool_Check(arg.ptr()) || PyLong_Check(arg.ptr())) {
      function.bind(arg.cast<int64_t>());
    } else if (PyFloat_Check(arg.ptr())) {
      function.bind(arg.cast<float>());
    } else if (py::isinstance<py::list>(arg) || py::isinstance<py::tuple>(arg)) {
      auto items = py::reinterpret_borrow<py::sequence>(arg);
      bool all_ints = true;
      for (auto item : items) all_ints &= PyLong_Check(item.ptr()) != 0;
      if (all_ints) {
        auto values = items.cast<std::vector<int64_t>>();
        function.bind(c10::ArrayRef<int64_t>(values));
      } else {
        auto values = items.cast<std::vector<float>>();
        function.bind(c10::ArrayRef<float>(values));
      }
    } else {
      TORCH_CHECK_TYPE(false, "mps_ops: ", name, ": argument ", i, " of type ",
                       py::str(py::type::handle_of(arg)).cast<std::string>(),
                       " cannot be bound (tensors, ints, floats and lists of them can)");
    }
  }
  for (size_t i = 0; i < threadgroup_memory.size(); ++i) {
    if (threadgroup_memory[i]) function.set_threadgroup_memory(static_cast<int>(i), threadgroup_memory[i]);
  }
  auto dims = [](const std::vector<uint32_t>& v) {
    return Dim3{v.size() > 0 ? v[0] : 1, v.size() > 1 ? v[1] : 1, v.size() > 2 ? v[2] : 1};
  };
  // A kernel that never returns must neither hold the GIL nor ignore Ctrl-C:
  // it runs without the GIL, and SIGINT stops it between threadgroups.
  const InterruptScope interrupts;
  {
    py::gil_scoped_release released;
    try {
      function.dispatch(dims(threads), group.empty() ? Dim3{0, 0, 0} : dims(group));
    } catch (const c10::Error&) {
      if (!interrupts.interrupted()) throw;
    }
  }
  if (interrupts.interrupted()) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }
}

inline void bind_shader_libraries(py::module& m) {
  m.def("library_load", &library_load);
  m.def("library_load_metallib", &library_load_metallib);
  m.def("library_kernels", &library_kernels);
  m.def("library_dispatch", &library_dispatch);
}

}  // namespace mps_ops::python
