// Host stubs of where.self and where.self_out: `override` ops, whose stock
// MPS kernels run MPSGraph up to torch 2.14 (masking in attention, losses,
// clamps written as where). One pass (csrc/kernels/where.metal) for every
// dtype the CPU's where takes but the double ones: the kernels move bits,
// one per element width. Checks and messages are the CPU's, in its order
// (check_as_the_cpu asks it where ours refuse).
#include "../runtime/cpu_witness.h"
#include "../runtime/elementwise_stubs.h"

#include <ATen/ops/result_type.h>
#include <ATen/ops/empty_strided.h>

#include <vector>

namespace mps_ops {

namespace {

KernelCache& where_kernels() {
  static KernelCache kernels("where");
  return kernels;
}

// The unsigned dtype of a dtype's width, whose kernel moves its bits.
c10::ScalarType bits_of(c10::ScalarType dtype) {
  switch (c10::elementSize(dtype)) {
    case 1: return at::kByte;
    case 2: return at::kUInt16;
    case 4: return at::kUInt32;
    default: return at::kUInt64;
  }
}

// An operand as the kernel reads it: in the result's dtype (converted once
// where it has another; a 0-dim CPU value on the host), viewed as its bits.
at::Tensor as_bits(const at::Tensor& t, c10::ScalarType common) {
  const at::Tensor typed = t.scalar_type() == common ? t : t.to(common);
  return typed.view(bits_of(common));
}

const at::Tensor& on_device_operand(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
  for (const at::Tensor* t : {&condition, &self, &other}) {
    if (!(t->dim() == 0 && t->is_cpu())) {
      return *t;
    }
  }
  return self;
}

// Ours, in the CPU's order: devices, the result's dtype (no double: Metal
// has none), then the condition's (bool, or uint8 with the CPU's warning).
void check_operands(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other,
                    c10::ScalarType common) {
  check_devices("where", {&condition, &self, &other});
  check_result_dtype("where", common, self);
  TORCH_CHECK_TYPE(common != at::kComplexDouble, "mps_ops: where does not support complex128 on ",
                   on_device_operand(condition, self, other).device(), ": Metal has no double; use complex64");
  TORCH_CHECK(condition.scalar_type() == at::kBool || condition.scalar_type() == at::kByte,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              condition.scalar_type());
}

// out = where(condition, self, other), one pass; out already has the
// result's dtype and the broadcast shape.
void run(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other, c10::ScalarType common,
         const at::Tensor& out, bool output_from_caller) {
  at::Tensor mask = condition;
  if (mask.scalar_type() == at::kByte) {
    TORCH_WARN_ONCE("where received a uint8 condition tensor. This behavior is deprecated and will be removed "
                    "in a future version of PyTorch. Use a boolean condition instead.");
    mask = mask.to(at::kBool);
  }
  const at::Tensor out_bits = out.view(bits_of(common));
  const at::Tensor self_bits = as_bits(self, common), other_bits = as_bits(other, common);
  auto iter = elementwise_config(output_from_caller)
                  .add_output(out_bits)
                  .add_const_input(mask)
                  .add_const_input(self_bits)
                  .add_const_input(other_bits)
                  .build();
  exec_elementwise(where_kernels(), iter, bits_of(common), {}, /*condition_first=*/true);
}

std::vector<int64_t> broadcast_shape(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
  return at::infer_size(at::infer_size(condition.sizes(), self.sizes()), other.sizes());
}

}  // namespace

at::Tensor where_self(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
  const auto common = at::result_type(self, other);
  check_as_the_cpu([&] { check_operands(condition, self, other, common); }, "where", false, "self",
                   [&] { return std::vector<c10::IValue>{condition, self, other}; });
  const auto shape = broadcast_shape(condition, self, other);
  const at::Tensor& like = on_device_operand(condition, self, other);
  const bool same_layout = self.sizes() == shape && other.sizes() == self.sizes() &&
                           condition.sizes() == self.sizes() && other.strides() == self.strides() &&
                           condition.strides() == self.strides();
  const at::Tensor out = same_layout ? empty_output_like(like, common)  // all three in one layout
                                     : at::empty_strided(shape, iterator_output_strides({&condition, &self, &other}),
                                                         like.options().dtype(common));
  run(condition, self, other, common, out, /*output_from_caller=*/false);
  return out;
}

// The CPU's where takes an out= of the result's dtype only.
at::Tensor& where_self_out(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other,
                           at::Tensor& out) {
  const auto common = at::result_type(self, other);
  check_as_the_cpu(
      [&] {
        TORCH_CHECK(out.scalar_type() == common, "Expected out type to be ", common, " but got ", out.scalar_type());
        check_operands(condition, self, other, common);
        check_devices("where", {&out});
      },
      "where", false, "self_out", [&] { return std::vector<c10::IValue>{condition, self, other, out}; });
  check_elementwise_output("where", out, common, broadcast_shape(condition, self, other), {&condition, &self, &other},
                           OutputDtype::exact);
  run(condition, self, other, common, out, /*output_from_caller=*/true);
  return out;
}

}  // namespace mps_ops
