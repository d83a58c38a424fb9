// Shapes of host stub shared by element-wise ops: functional, out= and
// in-place forms over one KernelCache; the checks and the output handling
// live here once. An op of a standard shape needs no stub file: the
// registry's `shape:` binds its overloads to the *_stub templates at the end
// (tools/codegen.py). An op with checks of its own (heaviside) calls the
// shape's functions from its .mm.
#pragma once

#include "elementwise.h"
#include "op_checks.h"

#include <ATen/ExpandUtils.h>
#include <ATen/ops/empty.h>

namespace mps_ops {

// Unary ops whose integer inputs compute in float (torch.special.*, logit).
// `params` (optional) are the functor's parameters.
at::Tensor& unary_float_out(KernelCache& kernels, const char* op, const at::Tensor& self,
                            at::Tensor& out, KernelParams params = {});
at::Tensor unary_float(KernelCache& kernels, const char* op, const at::Tensor& self,
                       KernelParams params = {});

// Unary ops whose result has the input's dtype (sign, frac, floor): an out=
// of that dtype only (a RuntimeError otherwise, as the CPU's iterator
// raises). A dtype the op lacks has no kernel (NotImplementedError).
at::Tensor unary_same(KernelCache& kernels, const char* op, const at::Tensor& self);
at::Tensor& unary_same_out(KernelCache& kernels, const char* op, const at::Tensor& self, at::Tensor& out);
at::Tensor& unary_same_inplace(KernelCache& kernels, const char* op, at::Tensor& self);

// Unary predicates with a bool result (signbit, isposinf): an out= of bool
// only, in the CPU's words ("signbit does not support non-boolean outputs.").
at::Tensor unary_bool(KernelCache& kernels, const char* op, const at::Tensor& self);
at::Tensor& unary_bool_out(KernelCache& kernels, const char* op, const at::Tensor& self, at::Tensor& out);

// Binary ops over one common input dtype; `result_of_common` maps that dtype
// to the output dtype. `params` (optional) are the functor's parameters
// (the functor's `params` struct, elementwise.h).
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

// An input as a kernel reads it, in the common dtype: converted once where it
// has another; a 0-dim CPU input stays as it is (bound as a value and
// converted on the host).
at::Tensor as_common(const at::Tensor& t, c10::ScalarType common);

// The standard shapes' stubs, one instantiation per op. Op is the aten name
// the checks' messages use, Kernel the kernel op (the registry's `kernels`);
// both are char arrays the generated registration defines.
//   unary_float   integer inputs compute in float (torch.special.ndtri ...)
//   unary_same    the result in the input's dtype; functional, out= and
//                 in-place (sign, frac, floor)
//   unary_bool    a bool result; functional and out= (signbit, isposinf)
//   binary_float  the same with two operands (special polynomials)
//   binary_same   two operands, the result in their common (promoted) dtype;
//                 functional, out= and in-place (gcd, lcm)
template <const char* Op, const char* Kernel>
at::Tensor unary_float_stub(const at::Tensor& self) {
  static KernelCache kernels(Kernel);
  return unary_float(kernels, Op, self);
}
template <const char* Op, const char* Kernel>
at::Tensor& unary_float_out_stub(const at::Tensor& self, at::Tensor& out) {
  static KernelCache kernels(Kernel);
  return unary_float_out(kernels, Op, self, out);
}

template <const char* Op, const char* Kernel>
at::Tensor unary_same_stub(const at::Tensor& self) {
  static KernelCache kernels(Kernel);
  return unary_same(kernels, Op, self);
}
template <const char* Op, const char* Kernel>
at::Tensor& unary_same_out_stub(const at::Tensor& self, at::Tensor& out) {
  static KernelCache kernels(Kernel);
  return unary_same_out(kernels, Op, self, out);
}
template <const char* Op, const char* Kernel>
at::Tensor& unary_same_inplace_stub(at::Tensor& self) {
  static KernelCache kernels(Kernel);
  return unary_same_inplace(kernels, Op, self);
}

template <const char* Op, const char* Kernel>
at::Tensor unary_bool_stub(const at::Tensor& self) {
  static KernelCache kernels(Kernel);
  return unary_bool(kernels, Op, self);
}
template <const char* Op, const char* Kernel>
at::Tensor& unary_bool_out_stub(const at::Tensor& self, at::Tensor& out) {
  static KernelCache kernels(Kernel);
  return unary_bool_out(kernels, Op, self, out);
}

template <const char* Op, const char* Kernel>
at::Tensor binary_float_stub(const at::Tensor& lhs, const at::Tensor& rhs) {
  static KernelCache kernels(Kernel);
  return binary(kernels, Op, float_result_type, lhs, rhs);
}
template <const char* Op, const char* Kernel>
at::Tensor& binary_float_out_stub(const at::Tensor& lhs, const at::Tensor& rhs, at::Tensor& out) {
  static KernelCache kernels(Kernel);
  return binary_out(kernels, Op, float_result_type, lhs, rhs, out);
}

template <const char* Op, const char* Kernel>
at::Tensor binary_same_stub(const at::Tensor& lhs, const at::Tensor& rhs) {
  static KernelCache kernels(Kernel);
  return binary(kernels, Op, same_dtype, lhs, rhs);
}
template <const char* Op, const char* Kernel>
at::Tensor& binary_same_out_stub(const at::Tensor& lhs, const at::Tensor& rhs, at::Tensor& out) {
  static KernelCache kernels(Kernel);
  return binary_out(kernels, Op, same_dtype, lhs, rhs, out);
}
template <const char* Op, const char* Kernel>
at::Tensor& binary_same_inplace_stub(at::Tensor& self, const at::Tensor& other) {
  static KernelCache kernels(Kernel);
  return binary_inplace(kernels, Op, same_dtype, self, other);
}

}  // namespace mps_ops
