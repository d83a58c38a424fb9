// Host half of the threadgroup reductions (csrc/kernels/include/mps_ops/
// reduction.h): where each output slice's elements lie, and how threads and
// threadgroups map to slices.
#pragma once

#include "backend.h"
#include "host_name.h"
#include "kernel_params.h"

#include "../kernels/include/mps_ops/no_params.h"
#include "../kernels/include/mps_ops/reduction_layout.h"
#include "../kernels/include/mps_ops/shape_limits.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace mps_ops {

struct ReductionPlan {
  reduction_layout layout;
  int64_t slices;                     // output elements
  std::vector<int64_t> kept_shape;    // the output's shape with keepdim
  std::vector<int64_t> dropped_shape; // ... and without
  // Defined when the input's layout needs more dims than max_ndim:
  // a copy with the reduced dims innermost, which the kernel reads instead.
  at::Tensor input;
};

// dims: the reduced dims (any order, negative allowed, checked like the CPU
// does); empty means all of them. Size-1 dims vanish and adjacent dims that
// are contiguous with each other merge, so most layouts walk one inner dim.
ReductionPlan plan_reduction(const at::Tensor& input, at::IntArrayRef dims, bool all_if_empty = true);

// The CPU's check for reductions it refuses over nothing (no identity, or a
// kernel that wants one element): an empty reduced dim raises IndexError,
// "<prefix> Expected reduction dim <d> to have non-zero size."; an empty
// input with no dim named, RuntimeError where `dims_named` is false. A 0-dim
// input has one element and passes.
void check_reduced_dims_not_empty(const char* prefix, const at::Tensor& input, at::IntArrayRef dims,
                                  bool dims_named = true);

// Groups of 256 threads that fill a GPU: about as many threads as the
// largest GPUs keep in flight (an 80-core Apple GPU holds a few groups per
// core, so do big discrete GPUs on their 100-odd cores), so a dispatch of
// this many fills any of them and small GPUs (8 cores) simply run the
// groups in turn; it is no one GPU's core count. Split reductions cut long
// slices into up to this many chunks; the chunked passes below take up to
// this many groups.
constexpr int64_t split_groups = 1024;

// A two-pass reduction with kernels of its own (nll_loss's, the point-wise
// losses'): each group sums `chunk` consecutive items of n into a partial,
// then one group merges the partials in order. ceil(n / least_per_group)
// groups, at least one and at most most_groups (split_groups unless the
// caller says), so that the merge reads few partials per thread; every
// group's chunk starts inside n (the last may be shorter).
struct ChunkedPasses {
  int64_t groups;
  int64_t chunk;
};
ChunkedPasses chunked_passes(int64_t n, int64_t least_per_group, int64_t most_groups = split_groups);

// Threads of the one group that merges `groups` partials: whole SIMD
// groups, at most `cap` and the pipeline's limit.
uint32_t merge_group_threads(int64_t groups, int64_t cap, const KernelHandle* kernel);

// How a kernel takes its slices: `any` as the layout's mapping fields say
// (kernels built on reduce_slice / merge_slice), or always the rows mapping,
// whole slices (no columns, no split): masked_softmax, whose threads each
// need their row's max and sum.
// rows: SliceMapping's rows always (whole rows per thread group, several
// rows per group). register_rows: rows, with at most register_row_elements
// (shape_limits.h, which says when) of the first input's elements per
// thread where the row allows, for kernels that keep their row's values in
// registers between passes. held_rows: rows, and a row longer than a
// 256-thread group holds at elements_per_row_thread gets up to 1024 threads
// (within the pipeline's limit), for kernels that hold whole rows at that
// rate (softmax: rows of up to 32 x 1024 read once).
enum class SliceMapping { any, rows, register_rows, held_rows };

// The rows mapping's kernels (masked_softmax, softmax_backward: whole rows)
// count a row's elements in 32 bits.
void check_row_length(const char* op, const ReductionPlan& plan);

// Outputs (contiguous, `plan.slices` elements each) first, the inputs after
// them, then the layout (with the mapping chosen here) and the params (none
// bound when empty).
void dispatch_reduction(const KernelHandle* kernel, std::initializer_list<const at::Tensor*> outputs,
                        std::initializer_list<const at::Tensor*> inputs, const ReductionPlan& plan,
                        KernelParams params, SliceMapping mapping = SliceMapping::any);
inline void dispatch_reduction(const KernelHandle* kernel,
                               std::initializer_list<const at::Tensor*> outputs, const at::Tensor& input,
                               const ReductionPlan& plan, KernelParams params) {
  dispatch_reduction(kernel, outputs, {&input}, plan, params);
}

// Threads for kernels that fold rows of their own, one result per row (the
// margin losses, embedding_renorm): `share` threads per row (a power of two,
// at least 8, about elements_per_row_thread (shape_limits.h) elements each: the reductions'
// rows mapping), `group` threads per threadgroup (whole SIMD groups,
// group / share rows), `groups` groups.
struct RowThreads {
  int64_t share;
  int64_t group;
  int64_t groups;
};
RowThreads row_threads(int64_t row_length, int64_t rows, int64_t max_threads);

// A reducer's kernels as reduction.h's REGISTER_REDUCE_ONE_OP / _TWO_OP
// instantiate them: reduce_one / reduce_two and their merge pass.
struct ReducerKernels {
  const KernelHandle* reduce;
  const KernelHandle* merge;
};
ReducerKernels reducer_kernels(KernelCache& kernels, c10::ScalarType out, c10::ScalarType in);

// The same for reduce_one / reduce_two, which may split long slices over
// several groups (choose_split in reduction.cpp): outputs, a scratch buffer
// of the groups' states (bound even where nothing is split), the input, the
// layout, the params; then, where split, the merge pass with the outputs,
// the scratch, the layout and the params.
// Several inputs of one layout (the plan's; batch_norm's backward reads
// grad_out beside the input) are bound in order, the first defining the
// reducer's element size.
void dispatch_reduction(const ReducerKernels& kernels, std::initializer_list<const at::Tensor*> outputs,
                        std::initializer_list<const at::Tensor*> inputs, const ReductionPlan& plan,
                        KernelParams params);
inline void dispatch_reduction(const ReducerKernels& kernels, std::initializer_list<const at::Tensor*> outputs,
                               const at::Tensor& input, const ReductionPlan& plan, KernelParams params) {
  dispatch_reduction(kernels, outputs, {&input}, plan, params);
}

}  // namespace mps_ops
