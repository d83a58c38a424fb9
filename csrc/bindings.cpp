// mps_ops._C: the Python face of the extension. Policy decisions (which
// overloads to register) are made in Python (mps_ops/_registry.py); this
// file only carries them out.
#include "registry.h"
#include "runtime/backend.h"
#include "runtime/profile.h"

#if !defined(MPS_OPS_WITH_METAL)
#include "emulator/backend.h"
#endif

#include <ATen/ScalarOps.h>
#include <torch/extension.h>

#include <complex>

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
    records.append(py::make_tuple(r.name, r.policy, r.dtypes, r.opinfo, overloads));
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

py::list profile_stop() {
  py::list out;
  for (const auto& r : profile::stop()) {
    out.append(py::make_tuple(r.kernel, py::make_tuple(r.threads.x, r.threads.y, r.threads.z),
                              py::make_tuple(r.group.x, r.group.y, r.group.z), r.buffers));
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
  m.def("wrapped_number", &mps_ops::wrapped_number);
}
