#include "elementwise_stubs.h"

#include "cpu_witness.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/result_type.h>

namespace mps_ops {

c10::ScalarType same_dtype(c10::ScalarType common) { return common; }

namespace {

// out = f(self), one pass.
void run_unary(KernelCache& kernels, const at::Tensor& self, const at::Tensor& out, bool output_from_caller,
               KernelParams params = {}) {
  auto iter = elementwise_config(output_from_caller).add_output(out).add_const_input(self).build();
  exec_elementwise(kernels, iter, self.scalar_type(), params);
}

// A unary op's result of `dtype`, in self's layout.
at::Tensor unary_result(KernelCache& kernels, const char* op, const at::Tensor& self, c10::ScalarType dtype,
                        KernelParams params = {}) {
  check_device(op, self);
  check_dtype(op, self);
  check_result_dtype(op, dtype, self);
  at::Tensor out = empty_output_like(self, dtype);
  run_unary(kernels, self, out, /*output_from_caller=*/false, params);
  return out;
}

}  // namespace

at::Tensor& unary_float_out(KernelCache& kernels, const char* op, const at::Tensor& self,
                            at::Tensor& out, KernelParams params) {
  check_device(op, self);
  const auto result_dtype = float_result_type(self.scalar_type());
  check_out_dtype_first(result_dtype, out, OutputDtype::castable);
  check_dtype(op, self);
  check_result_dtype(op, result_dtype, self);
  if (!check_elementwise_output(op, out, result_dtype, self.sizes(), {&self}, OutputDtype::castable)) {
    out.copy_(unary_float(kernels, op, self, params));
    return out;
  }
  run_unary(kernels, self, out, /*output_from_caller=*/true, params);
  return out;
}

at::Tensor unary_float(KernelCache& kernels, const char* op, const at::Tensor& self, KernelParams params) {
  return unary_result(kernels, op, self, float_result_type(self.scalar_type()), params);
}


at::Tensor unary_same(KernelCache& kernels, const char* op, const at::Tensor& self) {
  check_as_the_cpu([&] { check_dtype(op, self); }, op, false, "", [&] { return std::vector<c10::IValue>{self}; });
  return unary_result(kernels, op, self, self.scalar_type());
}

at::Tensor& unary_same_out(KernelCache& kernels, const char* op, const at::Tensor& self, at::Tensor& out) {
  check_as_the_cpu(
      [&] {
        check_device(op, self);
        check_dtype(op, self);
      },
      op, false, "out", [&] { return std::vector<c10::IValue>{self, out}; });
  check_elementwise_output(op, out, self.scalar_type(), self.sizes(), {&self}, OutputDtype::exact);
  run_unary(kernels, self, out, /*output_from_caller=*/true);
  return out;
}

at::Tensor& unary_same_inplace(KernelCache& kernels, const char* op, at::Tensor& self) {
  check_as_the_cpu([&] { check_dtype(op, self); }, op, true, "", [&] { return std::vector<c10::IValue>{self}; });
  check_inplace(op, self);
  run_unary(kernels, self, self, /*output_from_caller=*/true);
  return self;
}

at::Tensor unary_bool(KernelCache& kernels, const char* op, const at::Tensor& self) {
  check_as_the_cpu([&] { check_dtype(op, self); }, op, false, "", [&] { return std::vector<c10::IValue>{self}; });
  return unary_result(kernels, op, self, at::kBool);
}

at::Tensor& unary_bool_out(KernelCache& kernels, const char* op, const at::Tensor& self, at::Tensor& out) {
  check_as_the_cpu(
      [&] {
        check_device(op, self);
        check_dtype(op, self);
        TORCH_CHECK(out.scalar_type() == at::kBool, op, " does not support non-boolean outputs.");
      },
      op, false, "out", [&] { return std::vector<c10::IValue>{self, out}; });
  check_elementwise_output(op, out, at::kBool, self.sizes(), {&self}, OutputDtype::exact);
  run_unary(kernels, self, out, /*output_from_caller=*/true);
  return out;
}

at::Tensor as_common(const at::Tensor& t, c10::ScalarType common) {
  if (t.scalar_type() == common || (t.dim() == 0 && t.is_cpu())) {
    return t;
  }
  return t.to(common);
}

namespace {

at::Tensor& run_binary(KernelCache& kernels, const at::Tensor& lhs, const at::Tensor& rhs,
                       at::Tensor& out, bool output_from_caller, KernelParams params) {
  const auto common = at::result_type(lhs, rhs);
  const at::Tensor lhs_in = as_common(lhs, common);
  const at::Tensor rhs_in = as_common(rhs, common);
  auto iter = elementwise_config(output_from_caller)
                  .add_output(out)
                  .add_const_input(lhs_in)
                  .add_const_input(rhs_in)
                  .build();
  exec_elementwise(kernels, iter, common, params);
  return out;
}

void check_binary_inputs(const char* op, const at::Tensor& lhs, const at::Tensor& rhs) {
  check_device(op, lhs);
  check_device(op, rhs);
  check_dtype(op, lhs);
  check_dtype(op, rhs);
}

}  // namespace

at::Tensor& binary_out(KernelCache& kernels, const char* op, ResultDtype result_of_common,
                       const at::Tensor& lhs, const at::Tensor& rhs, at::Tensor& out,
                       KernelParams params) {
  check_out_dtype_first(at::result_type(lhs, rhs), out, OutputDtype::castable);
  check_binary_inputs(op, lhs, rhs);
  const auto result_dtype = result_of_common(at::result_type(lhs, rhs));
  check_result_dtype(op, result_dtype, lhs);
  const auto shape = at::infer_size(lhs.sizes(), rhs.sizes());
  if (!check_elementwise_output(op, out, result_dtype, shape, {&lhs, &rhs}, OutputDtype::castable)) {
    out.copy_(binary(kernels, op, result_of_common, lhs, rhs, params));
    return out;
  }
  return run_binary(kernels, lhs, rhs, out, /*output_from_caller=*/true, params);
}

at::Tensor& binary_inplace(KernelCache& kernels, const char* op, ResultDtype result_of_common,
                           at::Tensor& lhs, const at::Tensor& rhs, KernelParams params) {
  check_binary_inputs(op, lhs, rhs);
  check_inplace(op, lhs);
  const auto result_dtype = result_of_common(at::result_type(lhs, rhs));
  check_result_dtype(op, result_dtype, lhs);
  TORCH_CHECK(c10::canCast(result_dtype, lhs.scalar_type()), "result type ", result_dtype,
              " can't be cast to the desired output type ", lhs.scalar_type());
  if (lhs.scalar_type() != result_dtype) {
    lhs.copy_(binary(kernels, op, result_of_common, lhs, rhs, params));
    return lhs;
  }
  return run_binary(kernels, lhs, rhs, lhs, /*output_from_caller=*/true, params);
}

at::Tensor binary(KernelCache& kernels, const char* op, ResultDtype result_of_common,
                  const at::Tensor& lhs, const at::Tensor& rhs, KernelParams params) {
  check_binary_inputs(op, lhs, rhs);
  const auto result_dtype = result_of_common(at::result_type(lhs, rhs));
  check_result_dtype(op, result_dtype, lhs);
  // The output lives with the device operand, never with a 0-dim CPU value,
  // and takes the layout of an input of the full shape (so a transposed
  // input with a scalar still runs the dense kernel); operands of other
  // layouts or shapes, the CPU's iterator's.
  const bool lhs_is_value = lhs.dim() == 0 && lhs.is_cpu() && !rhs.is_cpu();
  const bool rhs_is_value = rhs.dim() == 0 && rhs.is_cpu() && !lhs.is_cpu();
  const at::Tensor& primary = lhs_is_value ? rhs : lhs;
  const auto shape = at::infer_size(lhs.sizes(), rhs.sizes());
  const bool same_layout = lhs.sizes() == rhs.sizes() && lhs.strides() == rhs.strides();
  at::Tensor out;
  if (same_layout || (rhs.dim() == 0 && !lhs_is_value && lhs.sizes() == shape)) {
    out = empty_output_like(primary, result_dtype);
  } else if (lhs.dim() == 0 && !rhs_is_value && rhs.sizes() == shape) {
    out = empty_output_like(rhs, result_dtype);
  } else {
    out = at::empty_strided(shape, iterator_output_strides({&lhs, &rhs}), primary.options().dtype(result_dtype));
  }
  return run_binary(kernels, lhs, rhs, out, /*output_from_caller=*/false, params);
}

}  // namespace mps_ops
