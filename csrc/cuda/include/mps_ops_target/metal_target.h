// The CUDA target's part of the <metal_stdlib> stand-in (csrc/msl): SIMD-group
// functions as warp shuffles and votes, atomics as clang's relaxed builtins.
// Pointers stay plain pointers (no bounded_ptr): compute-sanitizer's memcheck
// checks accesses on the GPU.
#pragma once

#include <mps_ops_cuda/metal_simd.h>
#include <mps_ops_cuda/metal_atomic.h>
