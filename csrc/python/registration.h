// mps_ops._C's registration part: the op table the registry generated, and
// activate(), which registers the overloads Python's policy chose
// (mps_ops/_registry.py) for the MPS dispatch key.
#pragma once

#include "../registry.h"

#include <torch/csrc/utils/pybind.h>
#include <torch/library.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace mps_ops::python {

inline py::list op_records() {
  py::list records;
  for (int i = 0; i < generated::op_record_count; ++i) {
    const auto& r = generated::op_records[i];
    py::list overloads;
    for (int j = 0; j < r.overload_count; ++j) {
      overloads.append(r.overloads[j].name);
    }
    records.append(
        py::make_tuple(r.name, r.policy, r.dtypes, r.opinfo, r.forms, r.shape, r.domain, r.mpsgraph,
                       r.repairs, r.grad_opinfo, r.gpu_ratio, overloads));
  }
  return records;
}

inline const generated::OverloadRecord& overload_record(const std::string& name) {
  for (int i = 0; i < generated::op_record_count; ++i) {
    const auto& r = generated::op_records[i];
    for (int j = 0; j < r.overload_count; ++j) {
      if (name == r.overloads[j].name) {
        return r.overloads[j];
      }
    }
  }
  C10_THROW_ERROR(ValueError, "mps_ops: no registry entry has the overload " + name);
}

// One library per registered overload, so that an override can be taken
// back (destroying its library deregisters it, and the kernel it displaced
// is the MPS kernel again). Never destroyed otherwise: registrations stay for
// the life of the process, like TORCH_LIBRARY_IMPL's, and nothing runs at
// interpreter teardown (the map itself is leaked).
struct Registrations {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<torch::Library>> libraries;
};

inline Registrations& registrations() {
  static auto* state = new Registrations();
  return *state;
}

// Registers the named overloads for the MPS dispatch key (the ones already
// registered are left as they are).
inline void activate(const std::vector<std::string>& names) {
  Registrations& state = registrations();
  std::lock_guard<std::mutex> lock(state.mutex);
  for (const auto& name : names) {
    if (state.libraries.count(name)) {
      continue;
    }
    const auto& record = overload_record(name);
    auto library = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::MPS,
                                                    __FILE__, __LINE__);
    record.impl(*library);
    state.libraries.emplace(name, std::move(library));
  }
}

// Takes the named overloads' registrations back (the policy calls it for
// overrides only).
inline void deactivate(const std::vector<std::string>& names) {
  Registrations& state = registrations();
  std::lock_guard<std::mutex> lock(state.mutex);
  for (const auto& name : names) {
    overload_record(name);  // an unknown name is an error, as in activate
    state.libraries.erase(name);
  }
}

// Defines every overload the registry gives a schema (an operator some
// releases we support lack) in namespace mps_ops_compat, with our stub for
// the MPS dispatch key, and returns their names: there the tests and the GPU
// launcher reach its kernels on any release. Once per process, like activate.
inline std::vector<std::string> register_compat() {
  // A function-local static: C++ runs its initialiser once, thread-safely.
  static const std::vector<std::string> registered = [] {
    std::vector<std::string> names;
    auto* definitions = new torch::Library(torch::Library::FRAGMENT, "mps_ops_compat", std::nullopt, __FILE__,
                                           __LINE__);
    auto* kernels = new torch::Library(torch::Library::IMPL, "mps_ops_compat", c10::DispatchKey::MPS, __FILE__,
                                       __LINE__);
    for (int i = 0; i < generated::op_record_count; ++i) {
      const auto& r = generated::op_records[i];
      for (int j = 0; j < r.overload_count; ++j) {
        if (*r.overloads[j].schema) {
          definitions->def(r.overloads[j].schema);
          r.overloads[j].impl(*kernels);
          names.emplace_back(r.overloads[j].name);
        }
      }
    }
    return names;
  }();
  return registered;
}

// The named overloads registered for one more dispatch key, the device's
// own (CPU for the emulator, CUDA for the CUDA backend), for as long as the
// object lives: tensors on that device then reach our stubs through C++
// dispatch alone, as MPS tensors do on a Mac, and torch's own kernels for
// that key serve again once it is closed (the dispatcher keeps the kernel
// each registration displaced). bench_gpu.py times ours through it: under
// Python's dispatch mode, an op that waits for the GPU inside the call
// (a KernelFlag read back) had the mode's own return path timed after its
// wait, a cost no Mac pays.
class NativeRoute {
 public:
  NativeRoute(const std::vector<std::string>& names, const std::string& key)
      : library_(std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::parseDispatchKey(key),
                                                  __FILE__, __LINE__)) {
    for (const auto& name : names) {
      overload_record(name).impl(*library_);
    }
  }
  void close() { library_.reset(); }

 private:
  std::unique_ptr<torch::Library> library_;
};

inline void bind_registration(py::module& m) {
  py::class_<NativeRoute>(m, "NativeRoute")
      .def(py::init<const std::vector<std::string>&, const std::string&>(), py::arg("overloads"), py::arg("key"))
      .def("close", &NativeRoute::close);
  m.def("op_records", &op_records);
  m.def("activate", &activate, py::arg("overloads"));
  m.def("deactivate", &deactivate, py::arg("overloads"));
  m.def("register_compat", &register_compat);
}

}  // namespace mps_ops::python
