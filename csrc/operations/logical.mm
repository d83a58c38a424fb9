// Host stubs of logical_and.out, logical_or.out and logical_xor.out:
// `override` ops, whose stock MPS kernels run MPSGraph up to torch 2.14. The
// functional and in-place forms are torch's composites over .out, so these
// serve all three. One pass (csrc/kernels/logical.metal) over the operands in
// their common dtype into a bool out or one of that dtype (in place on a float
// mask); an out of another dtype (the CPU takes any) gets the bool result
// converted.
// Complex operands are read as their nonzero tests (torch's own ne). Checks
// and messages are the CPU's (check_as_the_cpu asks it where ours refuse).
#include "../runtime/cpu_witness.h"
#include "../runtime/elementwise_stubs.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/result_type.h>

#include <vector>

namespace mps_ops {

namespace {

// The kernel reads a complex operand as its nonzero test (complex32 widened
// first, as the CPU computes it beside a float operand); others as they are.
at::Tensor as_readable(const at::Tensor& t) {
  if (!c10::isComplexType(t.scalar_type())) {
    return t;
  }
  return at::ne(t.scalar_type() == at::kComplexHalf ? t.to(at::kComplexFloat) : t, 0);
}

at::Tensor& logical_out(KernelCache& kernels, const char* op, const at::Tensor& self, const at::Tensor& other,
                        at::Tensor& out) {
  check_as_the_cpu(
      [&] {
        check_devices(op, {&self, &other, &out});
        const auto common = at::result_type(self, other);  // the CPU's promotion errors (uint16 with uint32)
        for (const at::Tensor* t : {&self, &other}) {
          if (!c10::isComplexType(t->scalar_type())) {
            check_dtype(op, *t);
          }
        }
        check_result_dtype(op, common, self);
        TORCH_CHECK_NOT_IMPLEMENTED(common != at::kComplexHalf, "mps_ops: ", op, " not implemented for '", common,
                                    "' on ", self.device());
      },
      op, false, "out", [&] { return std::vector<c10::IValue>{self, other, out}; });
  const at::Tensor lhs = as_readable(self), rhs = as_readable(other);
  const auto common = at::result_type(lhs, rhs);
  const auto shape = at::infer_size(lhs.sizes(), rhs.sizes());
  // Any out dtype takes the result (the CPU's comparison iterator casts to it).
  check_elementwise_output(op, out, out.scalar_type(), shape, {&self, &other}, OutputDtype::exact);
  // One pass into a bool out or one of the operands' dtype (in place on a
  // float mask); another dtype takes the bool result converted.
  const bool direct = out.scalar_type() == at::kBool || out.scalar_type() == common;
  if (!direct) {
    // The CPU's iterator writes out itself: it refuses an out that partly
    // overlaps an operand, which the bool result below would not see.
    at::assert_no_internal_overlap(out);
    at::assert_no_partial_overlap(out, self);
    at::assert_no_partial_overlap(out, other);
  }
  const at::Tensor result =
      direct ? out : at::empty_strided(out.sizes(), out.strides(), out.options().dtype(at::kBool));
  const at::Tensor lhs_in = as_common(lhs, common), rhs_in = as_common(rhs, common);
  auto iter = elementwise_config(/*output_from_caller=*/true)
                  .add_output(result)
                  .add_const_input(lhs_in)
                  .add_const_input(rhs_in)
                  .build();
  exec_elementwise(kernels, iter, common);
  if (!direct) {
    out.copy_(result);
  }
  return out;
}

}  // namespace

at::Tensor& logical_and_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  static KernelCache kernels("logical_and");
  return logical_out(kernels, "logical_and", self, other, out);
}

at::Tensor& logical_or_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  static KernelCache kernels("logical_or");
  return logical_out(kernels, "logical_or", self, other, out);
}

at::Tensor& logical_xor_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  static KernelCache kernels("logical_xor");
  return logical_out(kernels, "logical_xor", self, other, out);
}

}  // namespace mps_ops
