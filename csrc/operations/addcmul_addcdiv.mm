// Host stubs of addcmul and addcdiv (functional, out=, in place): `override`
// ops, whose stock MPS kernels run MPSGraph up to torch 2.14. Adam's and
// RMSprop's single-tensor steps call them in place on every parameter, every
// step. One pass over the three operands (csrc/kernels/addcmul_addcdiv.metal);
// checks and messages are the CPU's (its own, through check_as_the_cpu, where
// ours refuse). complex64 has no kernel: it takes torch's own mul, div and add.
#include "../runtime/cpu_witness.h"
#include "../runtime/elementwise_stubs.h"

#include "../kernels/addcmul_addcdiv_params.h"

#include <ATen/Dispatch.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/add.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/mul.h>

#include <vector>

namespace mps_ops {

namespace {

// addcmul or addcdiv: its aten name and kernels.
struct Pointwise {
  const char* op;
  KernelCache& kernels;
  bool divides;
};

Pointwise addcmul_op() {
  static KernelCache kernels("addcmul");
  return {"addcmul", kernels, false};
}

Pointwise addcdiv_op() {
  static KernelCache kernels("addcdiv");
  return {"addcdiv", kernels, true};
}

// The three operands' common dtype, as the CPU's iterator promotes them.
c10::ScalarType common_dtype(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2) {
  return at::native::result_type({self, t1, t2});
}

std::vector<int64_t> broadcast_shape(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2) {
  return at::infer_size(at::infer_size(self.sizes(), t1.sizes()), t2.sizes());
}

bool is_complex_call(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, c10::ScalarType common) {
  return common == at::kComplexFloat && self.scalar_type() != at::kComplexDouble &&
         t1.scalar_type() != at::kComplexDouble && t2.scalar_type() != at::kComplexDouble;
}

// Our checks, in the CPU's order (check_as_the_cpu asks it where these
// refuse): addcdiv's integer division (its meta function's), devices, each
// operand's dtype, then the kernels' (integral but wide unsigned for
// addcmul, floating); complex64 takes torch's own ops.
void check_operands(const Pointwise& p, const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2,
                    c10::ScalarType common) {
  TORCH_CHECK(!p.divides || !(at::isIntegralType(t1.scalar_type(), /*includeBool=*/true) &&
                              at::isIntegralType(t2.scalar_type(), /*includeBool=*/true)),
              "Integer division with addcdiv is no longer supported.");
  check_devices(p.op, {&self, &t1, &t2});
  if (is_complex_call(self, t1, t2, common)) {
    return;
  }
  for (const at::Tensor* t : {&self, &t1, &t2}) {
    check_dtype(p.op, *t);
  }
  const bool integral = at::isIntegralType(common, /*includeBool=*/false) && !is_wide_unsigned(common);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(common) || (!p.divides && integral), "\"", p.op,
                              "\" not implemented for '", c10::toString(common), "' on ", self.device());
}

// `value` as the CPU's kernel converts it for `dtype` (Scalar::to raises its
// overflow error): a float for the floating dtypes, the integer itself for
// the integral ones (addcmul's alone: the CPU refuses addcdiv's).
pointwise_value_params value_params(const at::Scalar& value, c10::ScalarType dtype) {
  pointwise_value_params params{};
  if (at::isFloatingType(dtype)) {
    params.real = value.to<float>();
  } else {
    AT_DISPATCH_INTEGRAL_TYPES(dtype, "addcmul", [&] { params.integer = static_cast<int64_t>(value.to<scalar_t>()); });
  }
  return params;
}

// out = the op over the three operands, converted to `common` where they
// differ; one pass.
void run(const Pointwise& p, const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2,
         const at::Scalar& value, c10::ScalarType common, const at::Tensor& out, bool output_from_caller) {
  const pointwise_value_params params = value_params(value, common);
  const at::Tensor self_in = as_common(self, common), t1_in = as_common(t1, common), t2_in = as_common(t2, common);
  auto iter = elementwise_config(output_from_caller)
                  .add_output(out)
                  .add_const_input(self_in)
                  .add_const_input(t1_in)
                  .add_const_input(t2_in)
                  .build();
  exec_elementwise(p.kernels, iter, common, params);
}

// complex64: torch's own mul (or div) and add, in the CPU's order
// (value * t1, then by t2), every step in complex64 (a half t1 scaled in
// half would round where the CPU's does not).
at::Tensor complex_product(const Pointwise& p, const at::Tensor& t1, const at::Tensor& t2, const at::Scalar& value) {
  const at::Tensor scaled = at::mul(as_common(t1, at::kComplexFloat), value);
  const at::Tensor divisor_or_factor = as_common(t2, at::kComplexFloat);
  return p.divides ? at::div(scaled, divisor_or_factor) : at::mul(scaled, divisor_or_factor);
}

bool is_cpu_value(const at::Tensor& t) { return t.dim() == 0 && t.is_cpu(); }

// A fresh result: in self's layout where all three share it, else the
// CPU's iterator's; on the device (a 0-dim CPU operand's is not it).
at::Tensor fresh_result(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, c10::ScalarType dtype) {
  const bool same_layout = self.sizes() == t1.sizes() && self.sizes() == t2.sizes() &&
                           self.strides() == t1.strides() && self.strides() == t2.strides();
  if (same_layout && !is_cpu_value(self)) {
    return empty_output_like(self, dtype);
  }
  const at::Tensor* on_device = &self;
  for (const at::Tensor* t : {&self, &t1, &t2}) {
    if (!is_cpu_value(*t)) {
      on_device = t;
      break;
    }
  }
  return at::empty_strided(broadcast_shape(self, t1, t2), iterator_output_strides({&self, &t1, &t2}),
                           on_device->options().dtype(dtype));
}

at::Tensor functional(const Pointwise& p, const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2,
                      const at::Scalar& value) {
  const auto common = common_dtype(self, t1, t2);
  check_as_the_cpu([&] { check_operands(p, self, t1, t2, common); }, p.op, false, "",
                   [&] { return std::vector<c10::IValue>{self, t1, t2, value}; });
  if (is_complex_call(self, t1, t2, common)) {
    return at::add(self, complex_product(p, t1, t2, value));
  }
  check_result_dtype(p.op, common, self);
  at::Tensor out = fresh_result(self, t1, t2, common);
  run(p, self, t1, t2, value, common, out, /*output_from_caller=*/false);
  return out;
}

at::Tensor& out_form(const Pointwise& p, const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2,
                     const at::Scalar& value, at::Tensor& out) {
  const auto common = common_dtype(self, t1, t2);
  check_as_the_cpu(
      [&] {
        check_operands(p, self, t1, t2, common);
        check_devices(p.op, {&out});
        check_out_dtype_first(common, out, OutputDtype::castable);
      },
      p.op, false, "out", [&] { return std::vector<c10::IValue>{self, t1, t2, value, out}; });
  if (is_complex_call(self, t1, t2, common)) {
    return at::add_out(out, self, complex_product(p, t1, t2, value));
  }
  check_result_dtype(p.op, common, self);
  if (!check_elementwise_output(p.op, out, common, broadcast_shape(self, t1, t2), {&self, &t1, &t2},
                                OutputDtype::castable)) {
    out.copy_(functional(p, self, t1, t2, value));
    return out;
  }
  run(p, self, t1, t2, value, common, out, /*output_from_caller=*/true);
  return out;
}

at::Tensor& inplace(const Pointwise& p, at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2,
                    const at::Scalar& value) {
  const auto common = common_dtype(self, t1, t2);
  const auto shape = broadcast_shape(self, t1, t2);
  check_as_the_cpu(
      [&] {
        check_operands(p, self, t1, t2, common);
        TORCH_CHECK(c10::canCast(common, self.scalar_type()), "result type ", common,
                    " can't be cast to the desired output type ", self.scalar_type());
        TORCH_CHECK(self.sizes() == at::IntArrayRef(shape), "output with shape ", self.sizes(),
                    " doesn't match the broadcast shape ", at::IntArrayRef(shape));
      },
      p.op, true, "", [&] { return std::vector<c10::IValue>{self, t1, t2, value}; });
  if (is_complex_call(self, t1, t2, common)) {
    return self.add_(complex_product(p, t1, t2, value));
  }
  check_inplace(p.op, self);
  check_result_dtype(p.op, common, self);
  if (self.scalar_type() != common) {
    self.copy_(functional(p, self, t1, t2, value));
    return self;
  }
  run(p, self, t1, t2, value, common, self, /*output_from_caller=*/true);
  return self;
}

}  // namespace

at::Tensor addcmul(const at::Tensor& self, const at::Tensor& tensor1, const at::Tensor& tensor2,
                   const at::Scalar& value) {
  return functional(addcmul_op(), self, tensor1, tensor2, value);
}

at::Tensor& addcmul_out(const at::Tensor& self, const at::Tensor& tensor1, const at::Tensor& tensor2,
                        const at::Scalar& value, at::Tensor& out) {
  return out_form(addcmul_op(), self, tensor1, tensor2, value, out);
}

at::Tensor& addcmul_(at::Tensor& self, const at::Tensor& tensor1, const at::Tensor& tensor2,
                     const at::Scalar& value) {
  return inplace(addcmul_op(), self, tensor1, tensor2, value);
}

at::Tensor addcdiv(const at::Tensor& self, const at::Tensor& tensor1, const at::Tensor& tensor2,
                   const at::Scalar& value) {
  return functional(addcdiv_op(), self, tensor1, tensor2, value);
}

at::Tensor& addcdiv_out(const at::Tensor& self, const at::Tensor& tensor1, const at::Tensor& tensor2,
                        const at::Scalar& value, at::Tensor& out) {
  return out_form(addcdiv_op(), self, tensor1, tensor2, value, out);
}

at::Tensor& addcdiv_(at::Tensor& self, const at::Tensor& tensor1, const at::Tensor& tensor2,
                     const at::Scalar& value) {
  return inplace(addcdiv_op(), self, tensor1, tensor2, value);
}

}  // namespace mps_ops
