// mps_ops._C's introspection part: which backend runs, profile() records,
// the built-in kernels and their declared parameters, the emulator's switches,
// and the wrapped-number helper the testing mode needs.
#pragma once

#include "../runtime/backend.h"
#include "../runtime/profile.h"

#if defined(MPS_OPS_WITH_EMULATOR)
#include "../emulator/backend.h"
#include "../emulator/kernel_table.h"
#include "../emulator/options.h"
#elif defined(MPS_OPS_WITH_CUDA)
#include "../cuda/cuda_backend.h"
#endif

#include <ATen/ScalarOps.h>
#include <torch/csrc/utils/pybind.h>

#include <complex>

namespace mps_ops::python {

inline py::list profile_stop(size_t mark) {
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
inline at::Tensor wrapped_number(py::handle value) {
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

// The [[buffer(N)]] parameters a built-in kernel declares, as (slot, kind,
// bytes) in declaration order (kind: "d" device pointer, "c" constant
// pointer, "v" constant reference; bytes: the pointee's or referenced type's
// size). The emulator's table has them from the prepass; none on Metal.
inline py::list kernel_params(const std::string& host_name) {
  py::list params;
#if defined(MPS_OPS_WITH_EMULATOR)
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

inline std::vector<std::string> kernel_names() {
#if defined(MPS_OPS_WITH_EMULATOR)
  return emulator_kernel_names();
#elif defined(MPS_OPS_WITH_CUDA)
  return cuda_kernel_names();  // kernels.txt of the PTX directory
#else
  return {};
#endif
}

inline void bind_introspection(py::module& m) {
  m.def("backend", [] { return std::string(backend().name()); });
  m.def("profile_start", &profile::start);
  m.def("profile_stop", &profile_stop);
  m.def("kernel_names", &kernel_names);
  m.def("kernel_params", &kernel_params);
  m.def("wrapped_number", &wrapped_number);
#if defined(MPS_OPS_WITH_EMULATOR)
  m.def("set_checked", [](bool on) { return emulator::options().checked.exchange(on); });
  m.def("set_reverse_group_order", [](bool on) { return emulator::options().reverse_group_order.exchange(on); });
  m.def("set_dry_run", [](bool on) { return emulator::options().dry_run.exchange(on); });
  m.def("set_pipeline_thread_limit",
        [](uint32_t limit) { return emulator::options().pipeline_thread_limit.exchange(limit); });
#endif
}

}  // namespace mps_ops::python
