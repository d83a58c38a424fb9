// Host stub of hash_tensor (torch.hash_tensor, functional and out=): the xor
// of each slice's elements as uint64 bits. Kernel in
// csrc/kernels/hash_tensor.metal; checks, their order and messages are the
// CPU's.
#include "../runtime/contiguous_output.h"
#include "../runtime/element_pairs.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include <ATen/ops/empty.h>

namespace mps_ops {

namespace {

// The modes torch defines: 0, xor of the widened bits.
constexpr int64_t xor_of_widened_bits = 0;

void hash_tensor_into(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode, at::Tensor& out) {
  static KernelCache kernels("hash_tensor");
  static const no_params nothing{};
  check_device("hash_tensor", self);
  TORCH_CHECK(out.scalar_type() == at::kUInt64, "Expected result to be of dtype uint64, but got ",
              out.scalar_type());
  check_reduced_dims_not_empty("hash_tensor:", self, dim, !dim.empty());
  const ReductionPlan plan = plan_reduction(self, dim);
  TORCH_CHECK(mode == xor_of_widened_bits, "Unknown hash_tensor mode: ", mode);
  check_dtype("hash_tensor", self);
  check_output("hash_tensor", out, at::kUInt64, keepdim ? plan.kept_shape : plan.dropped_shape, {&self});
  const ContiguousOutput target(out, at::kUInt64);
  // Half and bfloat16 go in as their bits (int16 views of the same memory,
  // or int32 pairs of them where in_words allows): their kernels widen the
  // bits themselves, NaN payloads included.
  static KernelCache half_bits_kernels("hash_tensor_half_bits");
  static KernelCache bfloat_bits_kernels("hash_tensor_bfloat_bits");
  static KernelCache half_pairs_kernels("hash_tensor_half_pairs");
  static KernelCache bfloat_pairs_kernels("hash_tensor_bfloat_pairs");
  const auto dtype = self.scalar_type();
  const bool as_bits = dtype == at::kHalf || dtype == at::kBFloat16;
  const std::optional<WordPlan> words = as_bits ? slices_in_words("hash_tensor", self, plan) : std::nullopt;
  KernelCache& chosen = !as_bits              ? kernels
                        : dtype == at::kHalf ? (words ? half_pairs_kernels : half_bits_kernels)
                                             : (words ? bfloat_pairs_kernels : bfloat_bits_kernels);
  // (Where the plan made a copy, the kernel reads that copy's same bytes.)
  const at::Tensor input = words ? words->words : as_bits ? self.view(at::kShort) : self;
  dispatch_reduction(reducer_kernels(chosen, at::kUInt64, input.scalar_type()), {&target.tensor}, input,
                     words ? words->plan : plan, nothing);
  target.copy_back();
}

}  // namespace

at::Tensor hash_tensor(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode) {
  at::Tensor out = at::empty({0}, self.options().dtype(at::kUInt64));
  hash_tensor_into(self, dim, keepdim, mode, out);
  return out;
}

at::Tensor& hash_tensor_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode,
                            at::Tensor& out) {
  hash_tensor_into(self, dim, keepdim, mode, out);
  return out;
}

}  // namespace mps_ops
