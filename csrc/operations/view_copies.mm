// Host stubs of ops that copy a view of their input out: channel_shuffle,
// narrow_copy.out, repeat, pixel_shuffle and pixel_unshuffle. Each builds the
// view here (no data moves) and runs the copy kernel of
// csrc/kernels/copy.metal over it. Checks and messages are the CPU's.
#include "../runtime/elementwise.h"
#include "../runtime/op_checks.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/native/PixelShuffle.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/view_as_real.h>

#include <numeric>
#include <vector>

namespace mps_ops {

namespace {

// dst[i] = src[i] for two views of one shape, in one dispatch. Complex
// elements (which Metal has no type for) move as their real and imaginary
// parts: both views as pairs along a new last dim.
void copy_view(const at::Tensor& dst, const at::Tensor& src, bool output_from_caller) {
  static KernelCache kernels("copy");
  const bool parts = src.is_complex();
  const at::Tensor to = parts ? at::view_as_real(dst) : dst;
  const at::Tensor from = parts ? at::view_as_real(src) : src;
  auto iter = elementwise_config(output_from_caller).add_output(to).add_const_input(from).build();
  exec_elementwise(kernels, iter, from.scalar_type());
}

// The ops that only move elements take complex inputs as the CPU does (their
// parts are floats). A conjugate view never reaches a stub: torch's
// conjugate fallback resolves it before the backend's kernel runs.
void check_movable(const char* op, const at::Tensor& self) {
  check_device(op, self);
  if (self.is_complex()) {
    check_result_dtype(op, c10::toRealValueType(self.scalar_type()), self);
  } else {
    check_dtype(op, self);
  }
}

// pixel_shuffle's and pixel_unshuffle's dtypes are the CPU kernels': neither
// the wide unsigned types nor complex32.
void check_pixel_dtype(const char* op, const at::Tensor& self) {
  const c10::ScalarType dtype = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(!is_wide_unsigned(dtype) && dtype != at::kComplexHalf, "mps_ops: ", op,
                              " not implemented for '", dtype, "' on ", self.device());
}

// A permutation of the pixel shuffles' split views: the `batch` leading dims
// in place, then the five split dims in the order `rest` gives.
std::vector<int64_t> batch_dims_then(int64_t batch, std::initializer_list<int64_t> rest) {
  std::vector<int64_t> order(batch);
  std::iota(order.begin(), order.end(), 0);
  order.insert(order.end(), rest);
  return order;
}

// The result of pixel_shuffle or pixel_unshuffle (sizes: self's batch dims,
// then channels, height, width) in self's suggested memory format, as the
// CPU's kernels lay it out.
at::Tensor pixel_result(const at::Tensor& self, int64_t channels, int64_t height, int64_t width) {
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end() - 3);
  sizes.insert(sizes.end(), {channels, height, width});
  at::Tensor out = at::empty({0}, self.options());
  out.resize_(sizes, self.suggest_memory_format());
  return out;
}

}  // namespace

at::Tensor channel_shuffle(const at::Tensor& self, c10::SymInt groups_) {
  const int64_t groups = groups_.expect_int();
  check_device("channel_shuffle", self);
  check_dtype("channel_shuffle", self);
  TORCH_CHECK(self.dim() > 2, "channel_shuffle expects input with > 2 dims, but got input with sizes ",
              self.sizes());
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive. Value of groups:",
              groups);
  const int64_t channels = self.size(1);
  TORCH_CHECK(channels % groups == 0, "Number of channels must be divisible by groups. Got ", channels,
              " channels and ", groups, " groups.");
  at::Tensor out = at::empty(self.sizes(), self.options().memory_format(self.suggest_memory_format()));
  // out channel i * groups + j takes input channel j * (channels / groups) + i.
  const int64_t per_group = channels / groups;
  copy_view(out.unflatten(1, {per_group, groups}),
            self.unflatten(1, {groups, per_group}).transpose(1, 2), /*output_from_caller=*/false);
  return out;
}

at::Tensor& narrow_copy_out(const at::Tensor& self, int64_t dim, c10::SymInt start_,
                            c10::SymInt length_, at::Tensor& out) {
  int64_t start = start_.expect_int();
  const int64_t length = length_.expect_int();
  check_device("narrow_copy", self);
  check_out_dtype_first(self.scalar_type(), out);
  check_dtype("narrow_copy", self);
  TORCH_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  TORCH_CHECK(self.dtype() == out.dtype(), "Expected self.dtype() == output.dtype() to be true, but got false.");
  // The CPU wraps a negative dim (IndexError past the range) and checks a
  // positive one (RuntimeError).
  if (dim < 0) {
    dim = at::maybe_wrap_dim(dim, self.dim());
  } else {
    TORCH_CHECK(dim < self.dim(), "Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but got false.");
  }
  const int64_t size = self.size(dim);
  TORCH_CHECK_INDEX(start >= -size && start <= size, "start out of range (expected to be in range of [",
                    -size, ", ", size, "], but got ", start, ")");
  start = start < 0 ? start + size : start;
  TORCH_CHECK(start <= size - length && length >= 0, "start (", start, ") + length (", length,
              ") exceeds dimension size (", size, ").");
  const at::Tensor view = self.narrow(dim, start, length);
  check_output("narrow_copy", out, self.scalar_type(), view.sizes(), {&self});
  copy_view(out, view, /*output_from_caller=*/true);
  return out;
}

// repeat: the result, of sizes r_i * s_i (self's sizes s_i padded with
// leading ones), viewed as (r_0, s_0, r_1, s_1, ...) (a contiguous tensor
// always splits so), takes at every (r_0, r_1, ...) all of self: self's view
// with stride 0 along each r_i.
at::Tensor repeat(const at::Tensor& self, c10::SymIntArrayRef repeats_) {
  const at::IntArrayRef repeats = C10_AS_INTARRAYREF_SLOW(repeats_);
  TORCH_CHECK(repeats.size() >= static_cast<size_t>(self.dim()),
              "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  check_movable("repeat", self);
  const int64_t new_dims = static_cast<int64_t>(repeats.size()) - self.dim();
  std::vector<int64_t> sizes, split_sizes, split_strides;
  for (size_t d = 0; d < repeats.size(); ++d) {
    const int64_t i = static_cast<int64_t>(d) - new_dims;  // self's dim, negative for a new one
    const int64_t size = i < 0 ? 1 : self.size(i);
    sizes.push_back(size * repeats[d]);
    split_sizes.insert(split_sizes.end(), {repeats[d], size});
    split_strides.insert(split_strides.end(), {0, i < 0 ? 0 : self.stride(i)});
  }
  // A negative repeat raises here, in at::empty's words, as on the CPU.
  at::Tensor out = at::empty(sizes, self.options());
  if (out.numel() == 0) {
    return out;
  }
  copy_view(out.view(split_sizes), self.as_strided(split_sizes, split_strides, self.storage_offset()),
            /*output_from_caller=*/false);
  return out;
}

// pixel_shuffle: out[..., c, h r + i, w r + j] = self[..., c r^2 + i r + j, h, w].
at::Tensor pixel_shuffle(const at::Tensor& self, int64_t upscale_factor) {
  at::native::check_pixel_shuffle_shapes(self, upscale_factor);
  check_movable("pixel_shuffle", self);
  const int64_t r = upscale_factor, channels = self.size(-3) / (r * r);
  const int64_t height = self.size(-2), width = self.size(-1);
  at::Tensor out = pixel_result(self, channels, height * r, width * r);
  if (out.numel() == 0) {
    return out;  // before the CPU's dtype dispatch, which would raise
  }
  check_pixel_dtype("pixel_shuffle", self);
  const int64_t n = self.dim();  // dims (..., c, i, j, h, w) -> (..., c, h, i, w, j)
  const std::vector<int64_t> order = batch_dims_then(n - 3, {n - 3, n, n - 2, n + 1, n - 1});
  const at::Tensor to = out.unflatten(-1, {width, r}).unflatten(-3, {height, r});
  const at::Tensor from = self.unflatten(-3, {channels, r, r}).permute(order);
  if (out.stride(-1) != 1) {
    copy_view(to, from, /*output_from_caller=*/false);
    return out;
  }
  // A contiguous result's innermost dim would be j, r elements whose inputs
  // lie a channel apart: rows of r. One copy per j instead walks w, reading
  // self's rows in order and writing every r-th element (on any GPU, whole
  // memory transactions for the reads, where rows of r waste most of each).
  for (int64_t j = 0; j < r; ++j) {
    copy_view(to.select(-1, j), from.select(-1, j), /*output_from_caller=*/false);
  }
  return out;
}

// pixel_unshuffle: out[..., c r^2 + i r + j, h, w] = self[..., c, h r + i, w r + j].
at::Tensor pixel_unshuffle(const at::Tensor& self, int64_t downscale_factor) {
  at::native::check_pixel_unshuffle_shapes(self, downscale_factor);
  check_movable("pixel_unshuffle", self);
  const int64_t r = downscale_factor, channels = self.size(-3);
  const int64_t height = self.size(-2) / r, width = self.size(-1) / r;
  at::Tensor out = pixel_result(self, channels * r * r, height, width);
  if (out.numel() == 0) {
    return out;  // before the CPU's dtype dispatch, which would raise
  }
  check_pixel_dtype("pixel_unshuffle", self);
  const int64_t n = self.dim();  // dims (..., c, h, i, w, j) -> (..., c, i, j, h, w)
  const std::vector<int64_t> order = batch_dims_then(n - 3, {n - 3, n - 1, n + 1, n - 2, n});
  copy_view(out.unflatten(-3, {channels, r, r}),
            self.unflatten(-1, {width, r}).unflatten(-3, {height, r}).permute(order), /*output_from_caller=*/false);
  return out;
}

}  // namespace mps_ops
