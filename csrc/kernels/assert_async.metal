// _assert_async (a fill for torch 2.9 to 2.12; the host stub in
// csrc/operations/assert_async.mm): one thread compares the tensor's one
// value with zero and raises the host's KernelFlag where it equals it, so
// the check costs the caller no copy of the value (and, with error checks
// deferred, no wait: the assertion is then as asynchronous as its name).
// -0.0 is zero, as the CPU's is_nonzero has it (mps_ops/nonzero.h; PyTorch's
// own Metal kernel, from 2.13, tests whether all the value's bits are zero).
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/nonzero.h>
#include "assert_async_params.h"
using namespace metal;

template <typename T>
kernel void assert_nonzero(constant T* value [[buffer(0)]],
                           constant mps_ops::assert_async_params& params [[buffer(1)]],
                           device int* zero [[buffer(2)]],
                           uint index [[thread_position_in_grid]]) {
  bool nonzero = false;
  for (int part = 0; part < params.parts; ++part) {
    nonzero = nonzero || mps_ops::is_nonzero(value[part]);
  }
  if (!nonzero) {
    zero[0] = 1;
  }
}

#define ASSERT_ASYNC_INSTANTIATE(NAME, T) MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(NAME, dense, T, T), NAME, T)
MPS_OPS_FOR_ALL(ASSERT_ASYNC_INSTANTIATE, assert_nonzero)
