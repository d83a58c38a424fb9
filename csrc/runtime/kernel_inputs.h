// Tensors a kernel reads that stand for an op's inputs in a form kernels
// take: a random key drawn from a generator, a complex tensor's real parts.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <optional>

namespace mps_ops {

// The four 32-bit words keying a kernel's Philox streams (mps_ops/philox.h),
// drawn by a tiny random_ on the tensors' device from the given generator or
// the device's default one: the host never waits for them, a fixed seed
// reproduces and the generator advances. With draw false, four unset words
// for a kernel that will not read them (rrelu's evaluation).
at::Tensor philox_key(const at::TensorOptions& options, std::optional<at::Generator> generator, bool draw = true);

// A complex tensor as float pairs (its conjugate bit resolved, so the parts
// are the values'); any other tensor as itself. Kernels that test values
// against zero take the pairs (parts = 2 in their params).
at::Tensor real_parts(const at::Tensor& self);

}  // namespace mps_ops
