// Host stubs of index_reduce_, index_reduce and index_reduce.out (fills for
// torch 2.9 to 2.11): the CPU's checks in its meta function's order, then
// one sort of the keys index * count + position and one kernel
// (csrc/kernels/index_reduce.metal) over the result, written in place.
#include "../runtime/error_checks.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_flag.h"
#include "../runtime/kernel_function.h"
#include "../runtime/kernel_inputs.h"
#include "../runtime/op_checks.h"

#include "../kernels/index_reduce_params.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/empty.h>

#include <algorithm>

namespace mps_ops {
namespace {

int reduction_of(c10::string_view reduce) {
  if (reduce == "prod") {
    return index_reduce_prod;
  }
  if (reduce == "mean") {
    return index_reduce_mean;
  }
  if (reduce == "amax") {
    return index_reduce_amax;
  }
  TORCH_CHECK(reduce == "amin", "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got ",
              reduce, ".");
  return index_reduce_amin;
}

// The CPU's meta checks (index_func_meta_impl), in its order, then its dtype
// dispatch; the dim wrapped.
int64_t check_index_reduce(const char* op, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                           const at::Tensor& source) {
  check_devices(op, {&self, &source});
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_reduce_(): Index is supposed to be a vector, but got dim: ",
                    index.dim(), " with type: ", index.scalar_type(), " and size: ", index.sizes());
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "index_reduce_(): Expected dtype int32/int64 for index but got: ", index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "index_reduce_(): self (", self.scalar_type(),
              ") and source (", source.scalar_type(), ") must have the same scalar type");
  TORCH_CHECK(dim == 0 || dim < source.dim(), "index_reduce_(): Indexing dim ", dim,
              " is out of bounds of the source tensor with dim ", source.dim());
  // (A 0-dim source with other than one index: the CPU's message asks it
  // for size(dim), which raises.)
  TORCH_CHECK_INDEX(source.dim() != 0 || index.numel() == 1, "Dimension specified as ", dim,
                    " but tensor has no dimensions");
  const int64_t slices = source.dim() == 0 ? 1 : source.size(dim);
  TORCH_CHECK(index.numel() == slices, "index_reduce_(): Number of indices (", index.numel(),
              ") should be equal to source.size(dim): (", slices, "), for dim: ", dim);
  std::vector<int64_t> self_sizes = self.sizes().vec(), source_sizes = source.sizes().vec();
  if (source.dim() != 0 && self.dim() != 0) {
    self_sizes.erase(self_sizes.begin() + dim);
    source_sizes.erase(source_sizes.begin() + dim);
  }
  TORCH_CHECK(self_sizes == source_sizes, "source tensor shape must match self tensor shape, excluding the "
              "specified dimension. Got self.shape = ", self.sizes(), " source.shape = ", source.sizes());
  return dim;
}

void check_index_reduce_dtype(const char* op, const at::Tensor& self) {
  check_dtype(op, self);
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBool && !is_wide_unsigned(self.scalar_type()),
                              "\"index_func_\" not implemented for '", c10::toString(self.scalar_type()), "' on ",
                              self.device());
}

// result (self's copy, or self) reduced in place.
void run_index_reduce(const at::Tensor& result, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                      int reduce, bool include_self) {
  static KernelCache kernels("index_reduce");
  const int64_t count = index.numel();
  if (count == 0) {
    return;
  }
  const int64_t size = result.dim() == 0 ? 1 : result.size(dim);
  if (result.numel() == 0) {
    // No thread to find a bad index: the CPU's loop still checks each.
    const auto [lowest, highest] = value_range(index);
    TORCH_CHECK_INDEX(lowest >= 0 && highest < size, "index out of range in self");
    return;
  }
  TORCH_CHECK(result.numel() <= UINT32_MAX, "mps_ops: index_reduce of more than 2**32 - 1 elements");
  TORCH_CHECK(size <= INT64_MAX / (count + 1), "mps_ops: index_reduce of ", size, " targets and ", count,
              " indices: their keys pass 64 bits");
  // Indices outside [0, size) clamped to -1 or size first (no key
  // overflows; the kernel finds them at the keys' ends).
  const at::Tensor keys =
      sorted_position_keys(at::clamp(index.reshape({-1}).to(result.device(), at::kLong), -1, size));

  index_reduce_params p{};
  p.ndim = std::max<int>(1, static_cast<int>(result.dim()));
  TORCH_CHECK(p.ndim <= max_ndim, "mps_ops: index_reduce of more than ", int(max_ndim), " dims");
  for (int d = 0; d < result.dim(); ++d) {
    p.sizes[d] = result.size(d);
    p.result_strides[d] = result.stride(d);
    p.source_strides[d] = source.dim() == 0 ? 0 : source.stride(d);
  }
  if (result.dim() == 0) {
    p.sizes[0] = 1;
  }
  p.count = count;
  p.numel = result.numel();
  p.dim = static_cast<int>(dim);
  p.reduce = reduce;
  p.include_self = include_self ? 1 : 0;
  KernelFlag out_of_range;
  KernelFunction kernel(kernels.get(Variant::dense, result.scalar_type(), result.scalar_type()));
  kernel.bind_operands(BufferSpan{result, result.data_ptr(), view_span_bytes(result)},
                       BufferSpan{source, source.const_data_ptr(), view_span_bytes(source)}, keys, out_of_range)
      .bind(p);
  kernel.dispatch(Dim3{static_cast<uint32_t>(result.numel()), 1, 1});
  check_flag("index_reduce_", std::move(out_of_range), [](const KernelFlag& flag) {
    TORCH_CHECK_INDEX(!flag.raised(), "index out of range in self");
  });
}

}  // namespace

at::Tensor& index_reduce_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                          c10::string_view reduce, bool include_self) {
  const char* op = "index_reduce_";
  const int reduction = reduction_of(reduce);
  dim = check_index_reduce(op, self, dim, index, source);
  check_inplace(op, self, {&index, &source});
  check_index_reduce_dtype(op, self);
  run_index_reduce(self, dim, index, source, reduction, include_self);
  return self;
}

at::Tensor& index_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                             c10::string_view reduce, bool include_self, at::Tensor& out) {
  const char* op = "index_reduce";
  const int reduction = reduction_of(reduce);
  dim = check_index_reduce(op, self, dim, index, source);
  check_output(op, out, self.scalar_type(), self.sizes(), {&index, &source});
  check_index_reduce_dtype(op, self);
  if (!out.is_same(self)) {
    out.copy_(self);
  }
  run_index_reduce(out, dim, index, source, reduction, include_self);
  return out;
}

at::Tensor index_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                        c10::string_view reduce, bool include_self) {
  at::Tensor out = at::empty(self.sizes(), self.options());
  return index_reduce_out(self, dim, index, source, reduce, include_self, out);
}

}  // namespace mps_ops
