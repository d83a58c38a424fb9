// Host stubs of the selection reductions: max.unary_out,
// min.unary_out (torch.max(x, out=...)), _aminmax and _aminmax.dim. Kernels in
// csrc/kernels/min_max.metal; checks and messages are the CPU's.
#include "../runtime/contiguous_output.h"
#include "../runtime/element_pairs.h"
#include "../runtime/host_name.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>

#include <initializer_list>
#include <optional>

namespace mps_ops {

namespace {

const no_params nothing{};

bool two_bytes(c10::ScalarType dtype) {
  return dtype == at::kHalf || dtype == at::kBFloat16;
}

// The plan's slices into outputs: contiguous half and bfloat16 slices of an
// even length as int32 words of two elements (slices_in_words) through the
// pairs kernels, anything else through `kernels`.
void dispatch_slices(const char* name, KernelCache& kernels, KernelCache& half_pairs, KernelCache& bfloat_pairs,
                     std::initializer_list<const at::Tensor*> outputs, const at::Tensor& self,
                     const ReductionPlan& plan) {
  const auto dtype = self.scalar_type();
  const std::optional<WordPlan> words = two_bytes(dtype) ? slices_in_words(name, self, plan) : std::nullopt;
  if (words) {
    KernelCache& pairs = dtype == at::kHalf ? half_pairs : bfloat_pairs;
    dispatch_reduction(reducer_kernels(pairs, dtype, at::kInt), outputs, words->words, words->plan, nothing);
  } else {
    dispatch_reduction(reducer_kernels(kernels, dtype, dtype), outputs, self, plan, nothing);
  }
}

// max.unary_out / min.unary_out: the whole tensor into one value (an empty
// input gives the identity, -inf / inf or the integer limits, as the CPU's
// amax/amin do); the result is cast to out's dtype where the CPU allows.
at::Tensor& extremum_out(KernelCache& kernels, KernelCache& half_pairs, KernelCache& bfloat_pairs, const char* name,
                         const at::Tensor& self, at::Tensor& out) {
  check_device(name, self);
  check_out_dtype_first(self.scalar_type(), out, OutputDtype::castable);
  check_dtype(name, self);
  check_output(name, out, self.scalar_type(), {}, {&self}, OutputDtype::castable);
  const ReductionPlan plan = plan_reduction(self, {});
  const ContiguousOutput target(out, self.scalar_type());
  dispatch_slices(name, kernels, half_pairs, bfloat_pairs, {&target.tensor}, self, plan);
  target.copy_back();
  return out;
}

std::tuple<at::Tensor, at::Tensor> aminmax_impl(const at::Tensor& self, std::optional<int64_t> dim,
                                                bool keepdim) {
  TORCH_WARN_ONCE("_aminmax is deprecated as of PyTorch 1.11 and will be removed in a future ",
                  "release. Use aminmax instead. This warning will only appear once per process.");
  check_device("_aminmax", self);
  check_dtype("_aminmax", self);
  ReductionPlan plan = dim ? plan_reduction(self, {*dim}) : plan_reduction(self, {});
  if (dim) {
    check_reduced_dims_not_empty("aminmax:", self, {*dim});
  } else {
    TORCH_CHECK(self.numel() > 0,
                "aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                "identity.");
  }
  const auto& shape = !dim ? std::vector<int64_t>{} : keepdim ? plan.kept_shape : plan.dropped_shape;
  at::Tensor lo = at::empty(shape, self.options()), hi = at::empty(shape, self.options());
  static KernelCache kernels("aminmax");
  static KernelCache half_pairs("aminmax_half_pairs");
  static KernelCache bfloat_pairs("aminmax_bfloat_pairs");
  static KernelCache half_column_pairs("aminmax_half_column_pairs");
  static KernelCache bfloat_column_pairs("aminmax_bfloat_column_pairs");
  const auto dtype = self.scalar_type();
  // Over a dim other than a contiguous last one of an even length: the input
  // and both outputs as int32 words of two neighbouring columns
  // (aminmax_column_pairs in min_max.metal).
  const int64_t reduced = dim ? at::maybe_wrap_dim(*dim, self.dim()) : -1;
  if (two_bytes(dtype) && dim && self.dim() >= 2 && self.numel() > 0 && self.is_contiguous() &&
      reduced != self.dim() - 1 && in_element_pairs(self.size(-1), {&self, &lo, &hi})) {
    const at::Tensor words = self.view(at::kInt);
    const at::Tensor lo_words = lo.view(at::kInt), hi_words = hi.view(at::kInt);
    KernelCache& pairs = dtype == at::kHalf ? half_column_pairs : bfloat_column_pairs;
    dispatch_reduction(reducer_kernels(pairs, at::kInt, at::kInt), {&lo_words, &hi_words}, words,
                       plan_reduction(words, {reduced}), nothing);
    return {lo, hi};
  }
  dispatch_slices("_aminmax", kernels, half_pairs, bfloat_pairs, {&lo, &hi}, self, plan);
  return {lo, hi};
}

}  // namespace

at::Tensor& max_unary_out(const at::Tensor& self, at::Tensor& out) {
  static KernelCache kernels("max");
  static KernelCache half_pairs("max_half_pairs");
  static KernelCache bfloat_pairs("max_bfloat_pairs");
  return extremum_out(kernels, half_pairs, bfloat_pairs, "max", self, out);
}

at::Tensor& min_unary_out(const at::Tensor& self, at::Tensor& out) {
  static KernelCache kernels("min");
  static KernelCache half_pairs("min_half_pairs");
  static KernelCache bfloat_pairs("min_bfloat_pairs");
  return extremum_out(kernels, half_pairs, bfloat_pairs, "min", self, out);
}

std::tuple<at::Tensor, at::Tensor> _aminmax(const at::Tensor& self) {
  return aminmax_impl(self, std::nullopt, false);
}

std::tuple<at::Tensor, at::Tensor> _aminmax_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return aminmax_impl(self, dim, keepdim);
}

}  // namespace mps_ops

namespace mps_ops {

// torch.mode(dim, keepdim); kernel in csrc/kernels/mode.metal.
}  // namespace mps_ops
