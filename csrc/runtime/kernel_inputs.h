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

// The keys target * n + position of n int64 targets (1-D), sorted: each
// target's positions form one run in index order, whether or not the
// device's sort is stable (put_'s repeated targets, index_reduce's). The
// caller keeps every key within int64.
at::Tensor sorted_position_keys(const at::Tensor& targets);

}  // namespace mps_ops
