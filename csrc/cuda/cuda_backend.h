// The CUDA side of the backend interface: the unchanged .metal kernels,
// compiled to PTX by tools/cuda_build.py (launch_abi.h is the entry points'
// contract), run on an NVIDIA GPU as a stand-in for an Apple GPU under real
// parallelism and NVIDIA's sanitizers. Not a CUDA product: the stubs still
// register for the MPS dispatch key, and mps_ops.testing.emulate() routes our
// overloads there with CUDA tensors.
#pragma once

#include "../runtime/backend.h"

#include <string>
#include <vector>

namespace mps_ops {

// device_type() == CUDA, name() == "cuda"; created on first use, never
// destroyed.
Backend& cuda_backend();
// Host names of every kernel in the PTX directory's kernels.txt, sorted.
std::vector<std::string> cuda_kernel_names();

}  // namespace mps_ops
