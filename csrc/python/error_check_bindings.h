// mps_ops._C's error-check part: when flagged ops report bad input
// (csrc/runtime/error_checks.h; mps_ops/_error_checks.py is the Python face).
#pragma once

#include "../runtime/error_checks.h"

#include <torch/csrc/utils/pybind.h>

#include <string>

namespace mps_ops::python {

inline void bind_error_checks(py::module& m) {
  m.def("error_checks", [] { return std::string(error_checks() == ErrorChecks::deferred ? "deferred" : "at_call"); });
  m.def("set_error_checks", [](const std::string& mode) {
    TORCH_CHECK_VALUE(mode == "at_call" || mode == "deferred",
                      "mps_ops.set_error_checks: mode must be \"at_call\" or \"deferred\", not \"", mode, "\"");
    // Back to at_call, the waiting checks run: a wait for the GPU.
    py::gil_scoped_release released;
    set_error_checks(mode == "deferred" ? ErrorChecks::deferred : ErrorChecks::at_call);
  });
  m.def("check_errors", [] {
    // Waits for the GPU: other Python threads may run meanwhile.
    py::gil_scoped_release released;
    check_errors();
  });
  m.def("pending_error_checks", &pending_error_checks);
  m.attr("max_pending_error_checks") = max_pending_error_checks;
}

}  // namespace mps_ops::python
