// mps_ops._C's registration part: the op table the registry generated, and
// activate(), which registers the overloads Python's policy chose
// (mps_ops/_registry.py) for the MPS dispatch key.
#pragma once

#include "../registry.h"

#include <torch/csrc/utils/pybind.h>
#include <torch/library.h>

#include <mutex>
#include <set>

namespace mps_ops::python {

inline py::list op_records() {
  py::list records;
  for (int i = 0; i < generated::op_record_count; ++i) {
    const auto& r = generated::op_records[i];
    py::list overloads;
    for (int j = 0; j < r.overload_count; ++j) {
      overloads.append(r.overloads[j].name);
    }
    records.append(py::make_tuple(r.name, r.policy, r.dtypes, r.opinfo, r.forms, r.shape, r.domain, overloads));
  }
  return records;
}

// Registers the named overloads for the MPS dispatch key. The libraries are
// never destroyed: registrations stay for the life of the process, like
// TORCH_LIBRARY_IMPL's, and nothing runs at interpreter teardown.
inline void activate(const std::vector<std::string>& names) {
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

inline void bind_registration(py::module& m) {
  m.def("op_records", &op_records);
  m.def("activate", &activate, py::arg("overloads"));
  m.def("register_compat", &register_compat);
}

}  // namespace mps_ops::python
