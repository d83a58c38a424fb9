// Shapes of host stub shared by element-wise ops: functional, out= and
// in-place forms over one KernelCache. Each op's .mm file names its kernels
// and picks the shape; the checks and the output handling live here once.
#pragma once

#include "../runtime/elementwise.h"
#include "../runtime/op_checks.h"

#include <ATen/ExpandUtils.h>
#include <ATen/ops/empty.h>

namespace mps_ops {

// Unary ops whose integer inputs compute in float (torch.special.*).
at::Tensor& unary_float_out(KernelCache& kernels, const char* op, const at::Tensor& self,
                            at::Tensor& out);
at::Tensor unary_float(KernelCache& kernels, const char* op, const at::Tensor& self);

// Binary ops over one common input dtype; `result_of_common` maps that dtype
// to the output dtype. `params` (optional) are the functor's parameters
// (REGISTER_BINARY_OP_WITH_PARAMS kernels).
using ResultDtype = c10::ScalarType (*)(c10::ScalarType common);
at::Tensor& binary_out(KernelCache& kernels, const char* op, ResultDtype result_of_common,
                       const at::Tensor& lhs, const at::Tensor& rhs, at::Tensor& out,
                       KernelParams params = {});
at::Tensor binary(KernelCache& kernels, const char* op, ResultDtype result_of_common,
                  const at::Tensor& lhs, const at::Tensor& rhs, KernelParams params = {});

// In-place: the result is written into lhs, which must already have the
// broadcast shape (TensorIterator raises the CPU's error otherwise).
at::Tensor& binary_inplace(KernelCache& kernels, const char* op, ResultDtype result_of_common,
                           at::Tensor& lhs, const at::Tensor& rhs, KernelParams params = {});

c10::ScalarType same_dtype(c10::ScalarType common);

}  // namespace mps_ops
