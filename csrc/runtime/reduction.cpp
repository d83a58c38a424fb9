#include "reduction.h"

#include "kernel_function.h"

#include <ATen/WrapDimUtils.h>

#include <algorithm>
#include <bitset>

namespace mps_ops {

namespace {

// Appends the dims of `which` in innermost-first order, merging neighbours
// that are contiguous with each other and dropping size-1 dims.
int collapse(const at::Tensor& input, const std::bitset<64>& chosen, bool want, long* sizes,
             long* strides) {
  int n = 0;
  for (int64_t d = input.dim() - 1; d >= 0; --d) {
    if (chosen[d] != want || input.size(d) == 1) {
      continue;
    }
    const long size = input.size(d), stride = input.stride(d);
    if (n > 0 && stride == strides[n - 1] * sizes[n - 1]) {
      sizes[n - 1] *= size;
      continue;
    }
    if (n == max_ndim) {
      return -1;  // more than the kernels' tables hold
    }
    sizes[n] = size;
    strides[n] = stride;
    ++n;
  }
  return n;
}

}  // namespace

ReductionPlan plan_reduction(const at::Tensor& input, at::IntArrayRef dims, bool all_if_empty) {
  const int64_t ndim = input.dim();
  std::bitset<64> reduced;
  if (dims.empty() && all_if_empty) {
    for (int64_t d = 0; d < ndim; ++d) {
      reduced[d] = true;
    }
  }
  for (int64_t dim : dims) {
    const int64_t d = at::maybe_wrap_dim(dim, ndim);
    TORCH_CHECK(!(ndim > 0 && reduced[d]), "dim ", d, " appears multiple times in the list of dims");
    if (ndim > 0) {
      reduced[d] = true;
    }
  }
  ReductionPlan plan{};
  plan.layout.outer_ndim = collapse(input, reduced, false, plan.layout.outer_sizes,
                                    plan.layout.outer_strides);
  plan.layout.inner_ndim = collapse(input, reduced, true, plan.layout.inner_sizes,
                                    plan.layout.inner_strides);
  if (plan.layout.outer_ndim < 0 || plan.layout.inner_ndim < 0) {
    // A copy with the kept dims first and the reduced dims innermost, each
    // group in its order: two dims at most, the same slices in the same order.
    std::vector<int64_t> order;
    for (const bool want : {false, true}) {
      for (int64_t d = 0; d < ndim; ++d) {
        if (reduced[d] == want) {
          order.push_back(d);
        }
      }
    }
    plan.input = input.permute(order).contiguous();
    std::bitset<64> moved;
    for (int64_t d = 0; d < ndim; ++d) {
      moved[d] = reduced[order[d]];
    }
    plan.layout.outer_ndim = collapse(plan.input, moved, false, plan.layout.outer_sizes, plan.layout.outer_strides);
    plan.layout.inner_ndim = collapse(plan.input, moved, true, plan.layout.inner_sizes, plan.layout.inner_strides);
  }
  plan.slices = 1;
  plan.layout.inner_numel = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    const int64_t size = input.size(d);
    plan.kept_shape.push_back(reduced[d] ? 1 : size);
    if (!reduced[d]) {
      plan.dropped_shape.push_back(size);
      plan.slices *= size;
    } else {
      plan.layout.inner_numel *= size;
    }
  }
  return plan;
}

void dispatch_reduction(const KernelHandle* kernel, std::initializer_list<const at::Tensor*> outputs,
                        std::initializer_list<const at::Tensor*> inputs, const ReductionPlan& plan,
                        KernelParams params) {
  if (plan.slices == 0) {
    return;
  }
  TORCH_CHECK(plan.slices <= UINT32_MAX, "mps_ops: a reduction with more than 2**32 - 1 outputs");
  // A multiple of the SIMD width (32 on every Apple GPU), enough threads for
  // the slice, at most 256: more threads per slice only add merge steps.
  constexpr int64_t simd_width = 32;
  const int64_t wanted = (std::max<int64_t>(plan.layout.inner_numel, 1) + simd_width - 1) /
                         simd_width * simd_width;
  const uint32_t group = static_cast<uint32_t>(std::min<int64_t>(
      {wanted, 256, static_cast<int64_t>(backend().max_threads_per_group(kernel))}));
  TORCH_INTERNAL_ASSERT(!plan.input.defined() || inputs.size() == 1,
                        "mps_ops: a reduction's copied input stands in for one input only");
  KernelFunction function(kernel);
  for (const at::Tensor* out : outputs) {
    function.bind(*out);
  }
  for (const at::Tensor* in : inputs) {
    function.bind(plan.input.defined() ? plan.input : *in);
  }
  function.mark_operands();
  function.bind(plan.layout, params);
  function.dispatch(Dim3{group, static_cast<uint32_t>(plan.slices), 1}, Dim3{group, 1, 1});
}

}  // namespace mps_ops
