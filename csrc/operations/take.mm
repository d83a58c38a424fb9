// Host stubs of torch.take (functional and out=) and Tensor.put_, indexing
// self as if flattened; kernels in csrc/kernels/take.metal. Checks and
// messages are the CPU's.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/error_checks.h"
#include "../runtime/kernel_function.h"
#include "../runtime/kernel_inputs.h"
#include "../runtime/op_checks.h"
#include "../runtime/per_element.h"

#include "../kernels/take_params.h"

#include <ATen/Context.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/floor_divide.h>
#include <ATen/ops/remainder.h>
#include <ATen/ops/sort.h>

#include <cstdlib>
#include <optional>

namespace mps_ops {
namespace {

// self's logical (row-major) layout as the kernels walk it: sizes, and
// strides in bytes, with size-1 dims dropped and neighbours that are
// row-major contiguous with each other merged; a 0-dim self is one element.
struct FlatLayout {
  int64_t sizes[max_ndim];
  int64_t strides[max_ndim];
  int64_t ndim = 0;

  // False when self needs more than max_ndim dims even merged: the
  // callers then walk a contiguous copy (one dim).
  bool fits = true;

  explicit FlatLayout(const at::Tensor& self) {
    const int64_t element = static_cast<int64_t>(self.element_size());
    for (int64_t d = 0; d < self.dim(); ++d) {
      const int64_t size = self.size(d), stride = self.stride(d) * element;
      if (size == 1) {
        continue;
      }
      if (ndim > 0 && strides[ndim - 1] == stride * size) {
        sizes[ndim - 1] *= size;
        strides[ndim - 1] = stride;
        continue;
      }
      if (ndim == max_ndim) {
        fits = false;
        return;
      }
      sizes[ndim] = size;
      strides[ndim] = stride;
      ++ndim;
    }
    if (ndim == 0) {
      sizes[0] = 1;
      strides[0] = 0;
      ndim = 1;
    }
  }
};

// Every index must lie in [-numel, numel). take's kernel checks its indices
// itself (a KernelFlag) and calls this only when one was out of range, for
// the CPU's message.
void check_flat_indices(const at::Tensor& index, int64_t numel) {
  const auto [lo, hi] = value_range(index);
  TORCH_CHECK_INDEX(lo >= -numel && hi < numel, "out of range: tried to access index ",
                    lo < -numel ? lo : hi, " on a tensor of ", numel, " elements.");
}

// The check of a per-index kernel's out_of_range flag (error_checks.h). It
// holds the index tensor until it runs, and finds the bad index then, for
// the CPU's message.
void check_index_flag(const char* op, const char* access, KernelFlag out_of_range, const at::Tensor& index,
                      int64_t numel) {
  check_flag(op, std::move(out_of_range), [op, access, index, numel](const KernelFlag& flag) {
    if (flag.raised()) {
      check_flat_indices(index, numel);
      TORCH_CHECK_INDEX(false, "out of range: ", op, "() ", access, " an index outside [", -numel, ", ", numel, ")");
    }
  });
}

// Dispatches one of take.metal's per-index kernels (take, put_store,
// put_add) over the contiguous index: per_position is the operand indexed
// by position (take's out, put_'s source), flat the one indexed through
// layout (take's self, put_'s target). One dispatch per 2**31 - 1 positions
// keeps the thread index in 32 bits.
void dispatch_per_index(const KernelHandle* handle, const at::Tensor& per_position, const KernelFlag& out_of_range,
                        const at::Tensor& index_c, const BufferSpan& flat, const FlatLayout& layout) {
  const int64_t n = index_c.numel();
  for (int64_t start = 0; start < n; start += INT32_MAX) {
    const size_t count = static_cast<size_t>(std::min<int64_t>(INT32_MAX, n - start));
    KernelFunction kernel(handle);
    kernel
        .bind_operands(BufferSpan{per_position,
                                  static_cast<const char*>(per_position.const_data_ptr()) +
                                      start * per_position.element_size(),
                                  count * per_position.element_size()},
                       out_of_range, BufferSpan{index_c, index_c.const_data_ptr<int64_t>() + start, count * sizeof(int64_t)},
                       flat)
        .bind(c10::ArrayRef<int64_t>(layout.sizes, layout.ndim), c10::ArrayRef<int64_t>(layout.strides, layout.ndim),
              static_cast<uint32_t>(layout.ndim), flat.owner.numel(), static_cast<uint32_t>(count));
    kernel.dispatch(Dim3{tiled_threads(count, take_per_thread), 1, 1});
  }
}

}  // namespace

at::Tensor& take_out(const at::Tensor& self, const at::Tensor& index, at::Tensor& out) {
  static KernelCache kernels("take");
  // No CPU-scalar exception here: every operand is bound as a buffer.
  TORCH_CHECK(self.device() == out.device() && index.device() == out.device(),
              "take(): self, index and out expected to be in the same device, but got self.device = ",
              self.device(), ", index.device = ", index.device(), ", and out.device = ", out.device());
  check_device("take", self);
  TORCH_CHECK(index.scalar_type() == at::kLong, "take(): Expected a long tensor for index, but got ",
              index.scalar_type());
  check_out_dtype_first(self.scalar_type(), out);
  check_dtype("take", self);
  TORCH_CHECK(self.scalar_type() == out.scalar_type(),
              "take(): self and out expected to have the same dtype, but got self.dtype = ",
              self.scalar_type(), " and out.dtype = ", out.scalar_type());
  check_output("take", out, self.scalar_type(), index.sizes(), {&index, &self});
  if (index.numel() == 0) {
    return out;
  }
  TORCH_CHECK_INDEX(self.numel() > 0, "take(): tried to take from an empty tensor");
  const int64_t numel = self.numel();
  FlatLayout layout(self);
  const at::Tensor source = layout.fits ? self : self.contiguous();
  if (!layout.fits) {
    layout = FlatLayout(source);
  }

  const at::Tensor index_c = index.contiguous();
  const ContiguousOutput result(out);
  const at::Tensor& target = result.tensor;
  KernelFlag out_of_range;
  dispatch_per_index(kernels.get(Variant::dense, self.scalar_type(), self.scalar_type()), target, out_of_range,
                     index_c, BufferSpan{source, source.const_data_ptr(), view_span_bytes(source)}, layout);
  // Enqueued before the wait, so the GPU runs it inside the same round trip
  // (an out= that raises holds garbage, as the CPU's).
  result.copy_back();
  check_index_flag("take", "read", std::move(out_of_range), index, numel);
  return out;
}

at::Tensor take(const at::Tensor& self, const at::Tensor& index) {
  at::Tensor out = at::empty({0}, self.options());
  return take_out(self, index, out);
}

namespace {

// self bound for put_add from the 32-bit word holding its first element to
// the end of the word holding its last: put_add adds a value of under 4
// bytes through its word (atomic_adder in take.metal). Null data where self
// starts off a word or its last word passes its storage.
BufferSpan words_of(const at::Tensor& self) {
  const size_t start = static_cast<size_t>(static_cast<const char*>(self.const_data_ptr()) -
                                           static_cast<const char*>(self.storage().data()));
  const size_t bytes = (view_span_bytes(self) + 3) & ~size_t(3);
  const bool fits = start % 4 == 0 && bytes <= self.storage().nbytes() - start;
  return BufferSpan{self, fits ? self.const_data_ptr() : nullptr, bytes};
}

// put_'s one-pass kernel (put_store, put_add), or null where repeated targets
// must be resolved in index order. The order may go where the user has not
// asked torch for deterministic algorithms, as torch's own CUDA put_ lets it
// go (its writes race; it adds with atomics): a sort of the targets first
// made put_ 0.35x torch's CUDA put_ on an H200. It may also go where every
// order gives one result: integer and bool additions, exact in any order.
// `words`: whether self may be added to through its 32-bit words (words_of).
const KernelHandle* one_pass_put(at::ScalarType dtype, bool accumulate, bool words) {
  static KernelCache store_kernels("put_store");
  static KernelCache add_kernels("put_add");
  const bool any_order = !at::globalContext().deterministicAlgorithms();
  if (!accumulate) {
    return any_order ? store_kernels.get(Variant::dense, dtype, dtype) : nullptr;
  }
  const bool addable = dtype == at::kInt || dtype == at::kFloat ||
                       (words && (dtype == at::kHalf || dtype == at::kBFloat16 || dtype == at::kShort ||
                                  dtype == at::kChar || dtype == at::kByte || dtype == at::kBool));
  const bool exact_in_any_order = !at::isFloatingType(dtype);
  return addable && (any_order || exact_in_any_order) ? add_kernels.get(Variant::dense, dtype, dtype) : nullptr;
}

// put_'s bins (take.metal's put_bin_*): worth their two extra passes where
// self is far larger than a GPU's last cache (an Apple GPU's system cache:
// 8 to 96 MiB; an H200's L2: 50 MiB) and the indices many beside self's
// elements: the writes running at once then land in a few pieces of
// bin_bytes, which stay in the cache while they take them, instead of each
// write fetching its own piece of self from memory. H200, torch's own put_
// over indices reordered by bins of 1 to 16 MiB against the same indices in
// random order (self of 256 MiB): 3.8x faster (half; 4.4x float32) with as
// many indices as elements, 1.9x (1.3x) with a sixteenth, none with 1/64;
// random stores 4.1x (3.6x) with as many. A self of 16 MiB gained nothing.
constexpr int64_t bin_bytes = int64_t(2) << 20;
constexpr int64_t smallest_binned_self_bytes = int64_t(64) << 20;
constexpr int64_t least_indices_per_binned_element = 8;  // at least numel / 8 indices

// The shift of put_'s bins (a flat position's bin is flat >> shift; binned_put
// widens the bins where they would be too many), or none where put_ goes
// straight to its targets: self not contiguous, past 2**32 - 1 elements
// (positions are 32-bit), more than 2**31 - 1 indices, or below the sizes
// above. MPS_OPS_PUT_BIN_BYTES sets the bin size and bins every put_
// that can be binned (the tests' way onto this path with small tensors; 0:
// never).
std::optional<int> put_bin_shift(const FlatLayout& layout, int64_t numel, int64_t element_size, int64_t n) {
  const bool contiguous = layout.ndim == 1 && layout.strides[0] == element_size;
  if (!contiguous || numel > int64_t(UINT32_MAX) || n > INT32_MAX) {
    return std::nullopt;
  }
  int64_t bin = bin_bytes;
  if (const char* forced = std::getenv("MPS_OPS_PUT_BIN_BYTES")) {
    bin = std::atoll(forced);
    if (bin <= 0) {
      return std::nullopt;
    }
  } else if (numel * element_size < smallest_binned_self_bytes || n * least_indices_per_binned_element < numel) {
    return std::nullopt;
  }
  // At most 31: positions are 32-bit, and the kernels shift them.
  int shift = 0;
  while (shift < 31 && (int64_t(2) << shift) * element_size <= bin) {
    ++shift;
  }
  return shift;
}

// put_ through bins: count per threadgroup and bin, a running sum over the
// counts (each group's first slot in each bin), the writes to their bins'
// slots, then to self in bin order. `self_span`: as the one-pass kernels
// bind self. Temporary memory: 4 bytes plus one element per index, and two
// uints per threadgroup and bin.
void binned_put(bool accumulate, const at::Tensor& target, const BufferSpan& self_span, const at::Tensor& source_c,
                const at::Tensor& index_c, int shift, const KernelFlag& out_of_range) {
  static KernelCache count_kernels("put_bin_count");
  static KernelCache scatter_kernels("put_bin_scatter");
  static KernelCache add_kernels("put_bin_add");
  static KernelCache store_kernels("put_bin_store");
  const int64_t n = index_c.numel(), numel = target.numel();
  const at::ScalarType dtype = target.scalar_type();
  const KernelHandle* count_kernel = count_kernels.get(Variant::dense, at::kLong, at::kLong);
  const KernelHandle* scatter_kernel = scatter_kernels.get(Variant::dense, dtype, dtype);
  // As many threads as both kernels' pipelines allow, up to
  // put_bin_group_threads; two bins a thread at most.
  const uint32_t threads = std::min<uint32_t>({put_bin_group_threads, backend().max_threads_per_group(count_kernel),
                                               backend().max_threads_per_group(scatter_kernel)});
  while (((numel - 1) >> shift) + 1 > 2 * int64_t(threads)) {
    ++shift;
  }
  const int64_t group_span = int64_t(threads) * put_bin_per_thread;
  put_bin_params params{};
  params.numel = numel;
  params.count = static_cast<int>(n);
  params.groups = static_cast<int>((n + group_span - 1) / group_span);
  params.bins = static_cast<int>(((numel - 1) >> shift) + 1);
  params.bin_shift = shift;
  const Dim3 grid{static_cast<uint32_t>(params.groups) * threads, 1, 1};
  const Dim3 group{threads, 1, 1};
  const at::Tensor counts = at::empty({int64_t(params.bins) * params.groups}, index_c.options().dtype(at::kInt));
  KernelFunction count(count_kernel);
  count.bind_operands(counts, out_of_range, index_c).bind(params);
  count.dispatch(grid, group);
  const at::Tensor ends = at::cumsum(counts, 0, at::kInt);
  const at::Tensor positions = at::empty({n}, index_c.options().dtype(at::kInt));
  const at::Tensor values = at::empty({n}, source_c.options());
  KernelFunction scatter(scatter_kernel);
  scatter.bind_operands(positions, values, counts, ends, index_c, source_c).bind(params);
  scatter.dispatch(grid, group);
  const BufferSpan filled{ends, ends.const_data_ptr<int32_t>() + (ends.numel() - 1), sizeof(int32_t)};
  KernelFunction apply((accumulate ? add_kernels : store_kernels).get(Variant::dense, dtype, dtype));
  apply.bind_operands(self_span, positions, values, filled);
  apply.dispatch(Dim3{tiled_threads(static_cast<uint64_t>(n), take_per_thread), 1, 1});
}
}  // namespace

// Otherwise duplicates are resolved as the CPU's serial loop resolves them:
// the last write wins, and accumulation adds in index order in self's dtype.
// The (target, position) pairs are sorted so each target's writes form one
// run in index order; the thread at a run's end does the run's work alone:
// no atomics, any dtype. A run of r repeats is r steps for one thread.
at::Tensor& put_(at::Tensor& self, const at::Tensor& index, const at::Tensor& source, bool accumulate) {
  static KernelCache kernels("put");
  TORCH_CHECK(index.scalar_type() == at::kLong, "put_(): Expected a long tensor for index, but got ",
              index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "put_(): self and source expected to have the same dtype, but got self.dtype = ",
              self.scalar_type(), " and source.dtype = ", source.scalar_type());
  TORCH_CHECK(self.device() == source.device() && self.device() == index.device(),
              "put_(): self, index and source expected to be in the same device, but got self.device = ",
              self.device(), ", index.device = ", index.device(), ", and source.device = ", source.device());
  check_inplace("put_", self, {&index, &source});
  TORCH_CHECK_INDEX(source.numel() == index.numel(),
                    "put_(): Expected source and index to have the same number of elements, but got "
                    "source.numel() = ", source.numel(), ", index.numel() = ", index.numel());
  TORCH_CHECK_INDEX(!(self.numel() == 0 && index.numel() != 0),
                    "put_(): Tried to put elements into an empty tensor");
  if (index.numel() == 0) {
    return self;
  }
  const int64_t numel = self.numel();
  FlatLayout layout(self);
  at::Tensor target = layout.fits ? self : self.contiguous();
  if (!layout.fits) {
    layout = FlatLayout(target);
  }
  const at::Tensor source_c = source.reshape({-1}).contiguous();
  const BufferSpan words = words_of(target);
  if (const KernelHandle* one_pass = one_pass_put(self.scalar_type(), accumulate, words.data != nullptr)) {
    KernelFlag out_of_range;
    const at::Tensor index_c = index.reshape({-1}).contiguous();
    const BufferSpan self_span =
        accumulate ? words : BufferSpan{target, target.const_data_ptr(), view_span_bytes(target)};
    if (const auto shift = put_bin_shift(layout, numel, target.element_size(), index_c.numel())) {
      binned_put(accumulate, target, self_span, source_c, index_c, *shift, out_of_range);
    } else {
      dispatch_per_index(one_pass, source_c, out_of_range, index_c, self_span, layout);
    }
    // Enqueued before the wait, so the GPU runs it inside the same round
    // trip (a put_ that raises has written its other targets; the CPU's has
    // written those before the bad index).
    if (!target.is_same(self)) {
      self.copy_(target);
    }
    check_index_flag("put_", "wrote", std::move(out_of_range), index, numel);
    return self;
  }
  TORCH_CHECK(index.numel() <= UINT32_MAX, "mps_ops: put_ of more than 2**32 - 1 indices");
  check_flat_indices(index, numel);
  // -1 and numel - 1 name one element: normalise before grouping.
  const at::Tensor flat = at::remainder(index.reshape({-1}), numel);
  const int64_t n = index.numel();
  at::Tensor targets, order;
  if (numel <= INT64_MAX / n) {
    const at::Tensor keys = sorted_position_keys(flat);
    targets = at::floor_divide(keys, n);
    order = at::remainder(keys, n);
  } else {
    std::tie(targets, order) = at::sort(flat, std::optional<bool>(true), /*dim=*/0);
  }
  put_params params{};
  std::copy(layout.sizes, layout.sizes + layout.ndim, params.sizes);
  std::copy(layout.strides, layout.strides + layout.ndim, params.strides);
  params.ndim = static_cast<int>(layout.ndim);
  params.accumulate = accumulate ? 1 : 0;
  params.narrow = numel <= static_cast<int64_t>(UINT32_MAX) ? 1 : 0;
  params.count = index.numel();
  KernelFunction kernel(kernels.get(Variant::dense, self.scalar_type(), self.scalar_type()));
  kernel.bind_operands(target, source_c, targets, order).bind(params);
  kernel.dispatch(Dim3{static_cast<uint32_t>(index.numel()), 1, 1});
  if (!target.is_same(self)) {
    self.copy_(target);
  }
  return self;
}

}  // namespace mps_ops
