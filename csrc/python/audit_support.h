// mps_ops._C's part for mps_ops.audit: tracing a model with MPS device
// semantics on a torch built without MPS (every Linux wheel). Fake tensors on
// device "mps" need no MPS kernel, but every device guard for them asks for
// MPS's DeviceGuardImpl (the generated wrappers of composite ops, autograd's
// engine), and a build without MPS has none: "PyTorch is not linked with
// support for mps devices". A no-op one stands in, as CPU and Meta have:
// fake tensors have no device state to switch.
#pragma once

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/utils/pybind.h>

namespace mps_ops::python {

// Registers the stand-in where the running torch has no MPS guard (a Mac's
// torch keeps its own); true if MPS now has one either way. Never
// unregistered: the registry holds raw pointers for the process's life.
inline bool stand_in_mps_device_guard() {
  if (!c10::impl::hasDeviceGuardImpl(c10::DeviceType::MPS)) {
    static const c10::impl::NoOpDeviceGuardImpl<c10::DeviceType::MPS> stand_in;
    // The registrar (torch 2.9 has no registerDeviceGuard) stores the pointer.
    static const c10::impl::DeviceGuardImplRegistrar registrar(c10::DeviceType::MPS, &stand_in);
  }
  return c10::impl::hasDeviceGuardImpl(c10::DeviceType::MPS);
}

inline void bind_audit_support(py::module& m) {
  m.def("stand_in_mps_device_guard", &stand_in_mps_device_guard,
        "Give a torch built without MPS a no-op MPS device guard (for tracing on fake mps tensors)");
}

}  // namespace mps_ops::python
