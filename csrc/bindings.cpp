// mps_ops._C: the Python face of the extension. Policy decisions (which
// overloads to register) are made in Python (mps_ops/_registry.py); this
// file only carries them out.
#include "registry.h"
#include "runtime/backend.h"
#include "runtime/kernel_function.h"
#include "runtime/profile.h"

#if !defined(MPS_OPS_WITH_METAL)
#include "emulator/backend.h"
#include "emulator/kernel_table.h"
#include "emulator/options.h"
#endif

#include <ATen/ScalarOps.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/library.h>

#include <complex>
#include <csignal>

#include <mutex>
#include <set>

namespace mps_ops {
namespace {

py::list op_records() {
  py::list records;
  for (int i = 0; i < generated::op_record_count; ++i) {
    const auto& r = generated::op_records[i];
    py::list overloads;
    for (int j = 0; j < r.overload_count; ++j) {
      overloads.append(r.overloads[j].name);
    }
    records.append(py::make_tuple(r.name, r.policy, r.dtypes, r.opinfo, r.forms, overloads));
  }
  return records;
}

// Registers the named overloads for the MPS dispatch key. The libraries are
// never destroyed: registrations stay for the life of the process, like
// TORCH_LIBRARY_IMPL's, and nothing runs at interpreter teardown.
void activate(const std::vector<std::string>& names) {
  static std::mutex mutex;
  static std::set<std::string> active;
  std::lock_guard<std::mutex> lock(mutex);
  auto* library = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::MPS, __FILE__,
                                     __LINE__);
  for (const auto& name : names) {
    if (active.count(name)) {
      continue;
    }
    bool found = false;
    for (int i = 0; i < generated::op_record_count && !found; ++i) {
      const auto& r = generated::op_records[i];
      for (int j = 0; j < r.overload_count; ++j) {
        if (name == r.overloads[j].name) {
          r.overloads[j].impl(*library);
          active.insert(name);
          found = true;
          break;
        }
      }
    }
    TORCH_CHECK_VALUE(found, "mps_ops: no registry entry has the overload ", name);
  }
}

py::list profile_stop(size_t mark) {
  py::list out;
  for (const auto& r : profile::stop(mark)) {
    out.append(py::make_tuple(r.kernel, py::make_tuple(r.threads.x, r.threads.y, r.threads.z),
                              py::make_tuple(r.group.x, r.group.y, r.group.z), r.buffers, r.operands,
                              r.inline_slots, r.element_sizes));
  }
  return out;
}

// A Python number turned back into the wrapped-number tensor C++ made of it:
// Python dispatch hands wrapped numbers to Python as plain numbers, and type
// promotion treats wrapped numbers differently from 0-dim tensors.
at::Tensor wrapped_number(py::handle value) {
  c10::Scalar scalar;
  if (PyBool_Check(value.ptr())) {
    scalar = c10::Scalar(value.cast<bool>());
  } else if (PyLong_Check(value.ptr())) {
    scalar = c10::Scalar(value.cast<int64_t>());
  } else if (PyFloat_Check(value.ptr())) {
    scalar = c10::Scalar(value.cast<double>());
  } else if (PyComplex_Check(value.ptr())) {
    scalar = c10::Scalar(c10::complex<double>(value.cast<std::complex<double>>()));
  } else {
    TORCH_CHECK_TYPE(false, "mps_ops: expected a Python number");
  }
  at::Tensor tensor = c10::scalar_to_tensor(scalar);
  tensor.unsafeGetTensorImpl()->set_wrapped_number(true);
  return tensor;
}

// compile_shader's libraries. A library handle is the backend's pointer,
// carried through Python as an integer; libraries are never unloaded.
uintptr_t library_load(const std::string& path_or_source) {
  return reinterpret_cast<uintptr_t>(backend().load_library(path_or_source));
}

uintptr_t library_load_metallib(const py::bytes& image) {
  const std::string data = image;
  return reinterpret_cast<uintptr_t>(backend().load_metallib(data.data(), data.size()));
}

std::vector<std::string> library_kernels(uintptr_t library) {
  return backend().library_kernel_names(reinterpret_cast<void*>(library));
}

// While a compile_shader kernel runs on the emulator, SIGINT asks it to stop
// (emulator::Options::stop) instead of reaching Python's handler, which
// cannot run until the kernel returns; the previous handler comes back after.
// On Metal the GPU runs the kernel: nothing to stop here.
class InterruptScope {
 public:
  // Constructed and destroyed with the GIL held, which orders the scopes of
  // several threads: the first installs the handler, the last restores it.
  InterruptScope() {
#if !defined(MPS_OPS_WITH_METAL)
    if (depth()++ == 0) {
      emulator::options().stop = 0;
      struct sigaction action {};
      action.sa_handler = [](int) { emulator::options().stop = 1; };
      sigemptyset(&action.sa_mask);
      sigaction(SIGINT, &action, &previous());
    }
#endif
  }
  ~InterruptScope() {
#if !defined(MPS_OPS_WITH_METAL)
    if (--depth() == 0) {
      sigaction(SIGINT, &previous(), nullptr);
      emulator::options().stop = 0;
    }
#endif
  }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
  bool interrupted() const {
#if !defined(MPS_OPS_WITH_METAL)
    return emulator::options().stop != 0;
#else
    return false;
#endif
  }

 private:
#if !defined(MPS_OPS_WITH_METAL)
  static int& depth() {
    static int open = 0;
    return open;
  }
  static struct sigaction& previous() {
    static struct sigaction handler {};
    return handler;
  }
#endif
};

// torch.mps.compile_shader's calling convention: arguments bind in order,
// tensors as buffers from their storage offset to the storage's end, Python
// ints as int64, floats as float32, lists as arrays of int64 (all ints) or
// float32.
void library_dispatch(uintptr_t library, const std::string& name, const py::list& args,
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

// The [[buffer(N)]] parameters a built-in kernel declares, as (slot, kind,
// bytes) in declaration order (kind: "d" device pointer, "c" constant
// pointer, "v" constant reference; bytes: the pointee's or referenced type's
// size). The emulator's table has them from the prepass; none on Metal.
py::list kernel_params(const std::string& host_name) {
  py::list params;
#if !defined(MPS_OPS_WITH_METAL)
  const auto& table = emulator::builtin_kernels();
  const auto it = table.find(host_name);
  TORCH_CHECK_VALUE(it != table.end(), "mps_ops: no built-in kernel named ", host_name);
  for (uint32_t i = 0; i < it->second.buffer_param_count; ++i) {
    const auto& p = it->second.buffer_params[i];
    params.append(py::make_tuple(p.slot, std::string(1, p.kind), p.bytes));
  }
#endif
  return params;
}

std::vector<std::string> kernel_names() {
#if defined(MPS_OPS_WITH_METAL)
  return {};
#else
  return emulator_kernel_names();
#endif
}

}  // namespace
}  // namespace mps_ops

PYBIND11_MODULE(_C, m) {
  m.doc() = "mps_ops native extension";
  m.def("backend", [] { return std::string(mps_ops::backend().name()); });
  m.def("op_records", &mps_ops::op_records);
  m.def("activate", &mps_ops::activate, py::arg("overloads"));
  m.def("profile_start", &mps_ops::profile::start);
  m.def("profile_stop", &mps_ops::profile_stop);
  m.def("kernel_names", &mps_ops::kernel_names);
  m.def("kernel_params", &mps_ops::kernel_params);
  m.def("wrapped_number", &mps_ops::wrapped_number);
  m.def("library_load", &mps_ops::library_load);
  m.def("library_load_metallib", &mps_ops::library_load_metallib);
  m.def("library_kernels", &mps_ops::library_kernels);
  m.def("library_dispatch", &mps_ops::library_dispatch);
#if !defined(MPS_OPS_WITH_METAL)
  m.def("set_checked", [](bool on) { return mps_ops::emulator::options().checked.exchange(on); });
  m.def("set_reverse_group_order",
        [](bool on) { return mps_ops::emulator::options().reverse_group_order.exchange(on); });
  m.def("set_dry_run", [](bool on) { return mps_ops::emulator::options().dry_run.exchange(on); });
#endif
}
