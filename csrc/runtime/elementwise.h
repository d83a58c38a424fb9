// Element-wise execution over a TensorIterator: one dispatch per 32-bit
// indexable piece, dense or strided chosen on the host, CPU scalars bound as
// bytes. Host stubs build the iterator (outputs first) with tensor inputs
// already in `in_dtype`, the kernel's input type; 0-dim CPU inputs may keep
// any dtype (their value is converted on the host).
#pragma once

#include "host_name.h"
#include "kernel_params.h"

#include <ATen/TensorIterator.h>

namespace mps_ops {

// params: the functor's parameter struct, bound after the operands and the
// strided metadata; an empty no_params where the functor takes none.
// condition_first: the first input is a bool condition the kernel reads as
// bool, whatever in_dtype (where.metal); a 0-dim CPU one is bound as a bool.
void exec_elementwise(KernelCache& kernels, at::TensorIteratorBase& iter, c10::ScalarType in_dtype,
                      KernelParams params = {}, bool condition_first = false);

// An iterator over outputs and inputs that never makes hidden copies: no
// dtype promotion or casting (the stub does what it needs explicitly), so the
// emulator runs exactly the kernels a Mac would. Memory overlap is checked
// only where the caller passed the output (out=, in-place): an output the
// stub just allocated cannot overlap anything.
at::TensorIteratorConfig elementwise_config(bool output_from_caller);

}  // namespace mps_ops
