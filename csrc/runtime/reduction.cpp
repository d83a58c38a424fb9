#include "reduction.h"

#include "kernel_function.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <bitset>

namespace mps_ops {

// Bound with every dispatch: the mapping's fields fit in what the dim
// counts' ints left over, so no dispatch binds more than before.
static_assert(sizeof(reduction_layout) == (4 * max_ndim + 2) * sizeof(long), "reduction_layout grew");

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

void check_reduced_dims_not_empty(const char* prefix, const at::Tensor& input, at::IntArrayRef dims,
                                  bool dims_named) {
  if (input.dim() == 0 || input.numel() != 0) {
    return;
  }
  TORCH_CHECK(dims_named, prefix, " Expected reduction dim to be specified for input.numel() == 0. Specify the ",
              "reduction dim with the 'dim' argument.");
  for (const int64_t dim : dims) {
    const int64_t d = at::maybe_wrap_dim(dim, input.dim());
    TORCH_CHECK_INDEX(input.size(d) != 0, prefix, " Expected reduction dim ", d, " to have non-zero size.");
  }
}

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
  int outer_ndim = collapse(input, reduced, false, plan.layout.outer_sizes, plan.layout.outer_strides);
  int inner_ndim = collapse(input, reduced, true, plan.layout.inner_sizes, plan.layout.inner_strides);
  // The kernels divide reduced-element indices in 32 bits where the reduced
  // dims do not merge into one (reduction.h's reduced_offset): a longer
  // slice of such a layout (more than 4 G elements: an expanded input, in
  // practice) gets the copy too, whose reduced dims merge.
  const bool indexable = inner_ndim <= 1 || plan.layout.inner_numel <= UINT32_MAX - 1024;
  if (outer_ndim < 0 || inner_ndim < 0 || !indexable) {
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
    outer_ndim = collapse(plan.input, moved, false, plan.layout.outer_sizes, plan.layout.outer_strides);
    inner_ndim = collapse(plan.input, moved, true, plan.layout.inner_sizes, plan.layout.inner_strides);
  }
  plan.layout.outer_ndim = static_cast<unsigned char>(outer_ndim);
  plan.layout.inner_ndim = static_cast<unsigned char>(inner_ndim);
  return plan;
}

namespace {

// Every Apple GPU's SIMD width: the kernels merge a SIMD group's states by
// shuffles, so a group's threads come in whole SIMD groups, and a slice's
// share a SIMD group (a power of two below the width) or fill whole ones.
constexpr int64_t simd_width = 32;
// Threads per group in the mappings below: enough to hide latency, few
// enough that a slice's merge stays short (more threads per slice only add
// merge steps). Not tuned to any GPU.
constexpr int64_t group_threads = 256;
// The largest group for SliceMapping::held_rows's long rows: Metal's limit
// for threads per threadgroup.
constexpr int64_t held_row_group_threads = 1024;
// A column-mapped slice's most rows of threads.
constexpr int64_t max_rows = 8;

int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }
int64_t floor_pow2(int64_t n) {
  int64_t p = 1;
  while (p * 2 <= n) {
    p *= 2;
  }
  return p;
}
int64_t ceil_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n) {
    p *= 2;
  }
  return p;
}

// Whether the kernel may count elements and add offsets in uint: every
// element offset and the slice length below 2**31 (room for a step past the
// end).
bool narrow_offsets(const reduction_layout& layout) {
  constexpr int64_t limit = int64_t{1} << 31;
  int64_t last = 0;  // offset of the input's last element
  for (int d = 0; d < layout.outer_ndim; ++d) {
    last += (layout.outer_sizes[d] - 1) * layout.outer_strides[d];
  }
  for (int d = 0; d < layout.inner_ndim; ++d) {
    last += std::max<int64_t>(layout.inner_sizes[d] - 1, 0) * layout.inner_strides[d];
  }
  return last < limit && layout.inner_numel < limit;
}

struct Mapping {
  int64_t group;  // threads per threadgroup
  int64_t groups;
  int columns;
  int threads_per_slice;
};

// Columns where the innermost kept dim lies closer-packed than the innermost
// reduced one (a reduction over a middle or outer dim): a SIMD group then
// reads 32 neighbouring outputs' elements together; with fewer outputs than
// half a SIMD group most lanes would idle, and rows read better.
bool wants_columns(const reduction_layout& layout, int64_t slices) {
  return layout.outer_ndim > 0 && layout.inner_ndim > 0 && layout.outer_strides[0] != 0 &&
         layout.outer_strides[0] < layout.inner_strides[0] && slices >= simd_width / 2;
}

// Rows: about 32 elements per thread, at least 8 threads per slice, so a
// SIMD group holds up to 4 slices of up to 256 and merges each by shuffles
// alone, and long slices take up to a whole group (of at most cap threads).
// Each thread's fixed costs (its start, a shuffle merge of log2(share)
// steps) then weigh little beside its loads: with 32 threads per slice of
// 256, aminmax and var spent more on the 5 merge steps than on 8 elements.
// 8 threads of a slice still read 32 neighbouring bytes of float together.
// The group is a whole number of SIMD groups and of slices (the kernels'
// merges assume both), its last slices inactive where the slices are fewer.
// (A pipeline limit that is not a power of two, 768 say, with slices of 512
// threads: a group of 768 would give its last 256 threads half a slice.)
constexpr int64_t min_threads_per_slice = 8;

RowThreads rows_of(int64_t n, int64_t slices, int64_t cap, int64_t per_thread = elements_per_row_thread) {
  const int64_t share =
      std::min(cap, std::max(min_threads_per_slice, ceil_pow2((n + per_thread - 1) / per_thread)));
  const int64_t group = std::min(cap, round_up(share * slices, simd_width)) / share * share;
  const int64_t per_group = group / share;
  return RowThreads{share, group, (slices + per_group - 1) / per_group};
}

Mapping rows_mapping(int64_t n, int64_t slices, int64_t cap) {
  const RowThreads rows = rows_of(n, slices, cap);
  return Mapping{rows.group, rows.groups, 0, static_cast<int>(rows.share)};
}

// The most threads per group the mappings use: group_threads (or wanted) within the
// pipeline's limit, in whole SIMD groups. A pipeline's limit below one SIMD
// group (none seen on an Apple GPU) would leave no mapping: the dispatch
// then fails on the backend's own check.
int64_t group_cap(int64_t max_threads, int64_t wanted = group_threads) {
  return std::min(wanted, std::max(simd_width, max_threads / simd_width * simd_width));
}

Mapping choose_mapping(const reduction_layout& layout, int64_t slices, int64_t max_threads,
                       SliceMapping allowed, int64_t element_bytes) {
  const int64_t n = layout.inner_numel;
  const int64_t cap = group_cap(max_threads);
  if (allowed == SliceMapping::held_rows && n > elements_per_row_thread * group_threads) {
    // Past a 256-thread group's share, a group as large as the pipeline
    // allows (its register use decides), so that the row stays held.
    return rows_mapping(n, slices, group_cap(max_threads, held_row_group_threads));
  }
  if (allowed == SliceMapping::register_rows) {
    const RowThreads rows =
        rows_of(n, slices, cap,
                element_bytes >= 4 ? int64_t{register_row_elements} : int64_t{elements_per_row_thread});
    return Mapping{rows.group, rows.groups, 0, static_cast<int>(rows.share)};
  }
  if (allowed == SliceMapping::any && wants_columns(layout, slices)) {
    // Rows deal out a slice's elements, each thread at least 4 of them.
    const int64_t rows = std::min({max_rows, floor_pow2(std::max<int64_t>(n / 4, 1)), cap / simd_width});
    const int64_t columns = std::min(round_up(slices, simd_width), cap / rows / simd_width * simd_width);
    return Mapping{columns * rows, (slices + columns - 1) / columns, static_cast<int>(columns),
                   static_cast<int>(rows)};
  }
  return rows_mapping(n, slices, cap);
}

// Splitting long slices over several groups, each reducing one chunk of
// 2**shift elements (reduction_layout's chunk_shift; chunks = 1: no split).
struct Split {
  int64_t chunks;
  int shift;
};

// A dispatch of fewer groups than a GPU runs at once leaves the rest of it
// idle: one long slice (a whole-tensor reduction) ran on one group, the
// first-dim reduction of 262144 x 256 on 8. Where the mapping gives fewer
// than split_groups groups, each slice is cut into chunks, so the dispatch
// has up to split_groups groups (between half and all of that: chunk
// lengths are powers of two), and no chunk is shorter than
// 2**min_chunk_shift elements. Kernels and pipelines are the same on every
// GPU; only the input's shape decides.
//
// split_groups (reduction.h): chunk states cost little either way: at most
// max_chunk_state_bytes per chunk of at least 4096 elements (under 1% of
// the input's bytes, read once by the merge pass), so erring high is cheap.
// min_chunk_shift: a group still folds at least 16 elements per thread (a
// column-mapped one at least 512), so each chunk's fixed costs (start,
// merge, one state stored and read again) stay small beside its loads.
// Chunks are powers of two so the kernel finds them by shifts.
constexpr int min_chunk_shift = 12;
// The merge pass's chunk states per thread. Each is a load the merge then
// waits on: at the rows mapping's 32 per thread, a slice's merge was 32
// memory round trips in a row on a GPU otherwise idle (H200: 38 us for
// batch_norm's 64 channels of 256 chunks, 23 us for one slice of 1024,
// beside first passes of 100-130 us). At 4, more threads share a slice and
// merge by shuffles (up to 6 more steps), and the pass takes a few us.
constexpr int64_t merge_states_per_thread = 4;

Split choose_split(const reduction_layout& layout, const Mapping& m) {
  const int64_t n = layout.inner_numel;
  const int64_t wanted = std::min((split_groups + m.groups - 1) / m.groups, n >> min_chunk_shift);
  if (m.groups >= split_groups || wanted < 2) {
    return Split{1, 0};
  }
  int shift = min_chunk_shift;
  while ((int64_t{1} << shift) * wanted < n) {
    ++shift;
  }
  return Split{(n + (int64_t{1} << shift) - 1) >> shift, shift};
}

// One pass over the input: kernel bound with outputs, [chunk states,] inputs,
// layout, params; where split, the merge pass after it.
void dispatch_passes(const KernelHandle* kernel, const KernelHandle* merge,
                     std::initializer_list<const at::Tensor*> outputs,
                     std::initializer_list<const at::Tensor*> inputs, const ReductionPlan& plan,
                     KernelParams params, SliceMapping mapping) {
  if (plan.slices == 0) {
    return;
  }
  TORCH_CHECK(plan.slices <= UINT32_MAX, "mps_ops: a reduction with more than 2**32 - 1 outputs");
  const at::Tensor& first_input = plan.input.defined() ? plan.input : **inputs.begin();
  const Mapping m = choose_mapping(plan.layout, plan.slices,
                                   static_cast<int64_t>(backend().max_threads_per_group(kernel)), mapping,
                                   static_cast<int64_t>(first_input.element_size()));
  const Split split = merge != nullptr ? choose_split(plan.layout, m) : Split{1, 0};
  reduction_layout layout = plan.layout;
  layout.columns = static_cast<unsigned short>(m.columns);
  layout.threads_per_slice = static_cast<unsigned short>(m.threads_per_slice);
  layout.narrow_offsets = narrow_offsets(plan.layout) ? 1 : 0;
  layout.chunk_shift = static_cast<unsigned char>(split.shift);
  TORCH_INTERNAL_ASSERT(!plan.input.defined() || inputs.size() == 1,
                        "mps_ops: a reduction's copied input stands in for one input only");
  // The chunk states: on the input's device, max_chunk_state_bytes each.
  const at::Tensor chunk_states =
      split.chunks > 1
          ? at::empty({plan.slices * split.chunks * max_chunk_state_bytes}, first_input.options().dtype(at::kByte))
          : at::Tensor();
  KernelFunction function(kernel);
  for (const at::Tensor* out : outputs) {
    function.bind(*out);
  }
  if (merge != nullptr) {
    // Unsplit, the kernel never touches this slot: an empty span of the first output.
    const at::Tensor& first_output = **outputs.begin();
    function.bind(chunk_states.defined() ? BufferSpan{chunk_states, chunk_states.const_data_ptr(),
                                                      static_cast<size_t>(chunk_states.numel())}
                                         : BufferSpan{first_output, first_output.const_data_ptr(), 0});
  }
  for (const at::Tensor* in : inputs) {
    function.bind(plan.input.defined() ? plan.input : *in);
  }
  function.mark_operands();
  function.bind(layout, params);
  const uint32_t group = static_cast<uint32_t>(m.group);
  function.dispatch(Dim3{group, static_cast<uint32_t>(m.groups), static_cast<uint32_t>(split.chunks)},
                    Dim3{group, 1, 1});
  if (split.chunks == 1) {
    return;
  }
  // The merge pass: rows over each slice's chunk states, as over elements.
  const RowThreads rows = rows_of(split.chunks, plan.slices,
                                  group_cap(static_cast<int64_t>(backend().max_threads_per_group(merge))),
                                  merge_states_per_thread);
  layout.columns = 0;
  layout.threads_per_slice = static_cast<unsigned short>(rows.share);
  KernelFunction merging(merge);
  for (const at::Tensor* out : outputs) {
    merging.bind(*out);
  }
  merging.bind(chunk_states);
  merging.mark_operands();
  merging.bind(layout, params);
  const uint32_t merge_group = static_cast<uint32_t>(rows.group);
  merging.dispatch(Dim3{merge_group, static_cast<uint32_t>(rows.groups), 1}, Dim3{merge_group, 1, 1});
}

}  // namespace

RowThreads row_threads(int64_t row_length, int64_t rows, int64_t max_threads) {
  return rows_of(row_length, rows, group_cap(max_threads));
}

ReducerKernels reducer_kernels(KernelCache& kernels, c10::ScalarType out, c10::ScalarType in) {
  return ReducerKernels{kernels.get(Variant::reduce, out, in), kernels.get(Variant::merge, out, in)};
}

void check_row_length(const char* op, const ReductionPlan& plan) {
  TORCH_CHECK(plan.layout.inner_numel <= INT32_MAX, "mps_ops: ", op, " over rows of more than 2**31 - 1 elements");
}

void dispatch_reduction(const KernelHandle* kernel, std::initializer_list<const at::Tensor*> outputs,
                        std::initializer_list<const at::Tensor*> inputs, const ReductionPlan& plan,
                        KernelParams params, SliceMapping mapping) {
  dispatch_passes(kernel, nullptr, outputs, inputs, plan, params, mapping);
}

void dispatch_reduction(const ReducerKernels& kernels, std::initializer_list<const at::Tensor*> outputs,
                        std::initializer_list<const at::Tensor*> inputs, const ReductionPlan& plan,
                        KernelParams params) {
  dispatch_passes(kernels.reduce, kernels.merge, outputs, inputs, plan, params, SliceMapping::any);
}

ChunkedPasses chunked_passes(int64_t n, int64_t least_per_group, int64_t most_groups) {
  const int64_t wanted = std::clamp<int64_t>((n + least_per_group - 1) / least_per_group, 1, most_groups);
  const int64_t chunk = std::max<int64_t>(1, (n + wanted - 1) / wanted);
  // Only the groups whose chunk starts inside n: with chunks rounded up,
  // `wanted` groups can reach past it (n = 2**18 + 1 in 1024 groups of 257:
  // the last three would start at or past n).
  return ChunkedPasses{std::max<int64_t>(1, (n + chunk - 1) / chunk), chunk};
}

uint32_t merge_group_threads(int64_t groups, int64_t cap, const KernelHandle* kernel) {
  return static_cast<uint32_t>(std::min<int64_t>({cap, static_cast<int64_t>(backend().max_threads_per_group(kernel)),
                                                  std::max<int64_t>(simd_width, round_up(groups, simd_width))}));
}

}  // namespace mps_ops
