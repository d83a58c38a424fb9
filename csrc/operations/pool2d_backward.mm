// Host stubs of the backward of 2-D max and average pooling (functional and
// grad_input= forms), overrides of MPSGraph kernels; kernels in
// csrc/kernels/pool2d_backward.metal. Checks, their order and messages are
// the CPU's: its structured meta functions' argument checks, then torch's own
// shape checks (ATen/native/Pool.h, called, so that they follow the running
// torch), then grad_input's dtype and size, then the dtype dispatch.
// grad_input takes self's suggested memory format, as the CPU's.
#include "../runtime/host_name.h"
#include "../runtime/error_checks.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include "../kernels/include/mps_ops/shape_limits.h"
#include "../kernels/pool2d_backward_params.h"

#include <ATen/TensorUtils.h>
#include <ATen/native/Pool.h>
#include <ATen/ops/empty.h>

#include <algorithm>

namespace mps_ops {

namespace {

// A window argument of one or two ints (stride: none means the kernel's).
struct PoolWindow {
  int kernel_size[2], stride[2], padding[2], dilation[2];
};

// Two ints from a list of one or two, checked to fit an int (the CPU's
// safe_downcast).
void two_ints(at::IntArrayRef values, int* out) {
  out[0] = at::native::safe_downcast<int, int64_t>(values[0]);
  out[1] = values.size() == 1 ? out[0] : at::native::safe_downcast<int, int64_t>(values[1]);
}

// The meta functions' argument checks; `pool` names the op in messages
// (max_pool2d, avg_pool2d); dilation is {1} for the average pool.
PoolWindow parse_window(const char* pool, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                        at::IntArrayRef padding, at::IntArrayRef dilation) {
  PoolWindow w{};
  TORCH_CHECK(kernel_size.size() == 1 || kernel_size.size() == 2, pool,
              ": kernel_size must either be a single int, or a tuple of two ints");
  two_ints(kernel_size, w.kernel_size);
  TORCH_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 2, pool,
              ": stride must either be omitted, a single int, or a tuple of two ints");
  if (stride.empty()) {
    std::copy(w.kernel_size, w.kernel_size + 2, w.stride);
  } else {
    two_ints(stride, w.stride);
  }
  TORCH_CHECK(padding.size() == 1 || padding.size() == 2, pool,
              ": padding must either be a single int, or a tuple of two ints");
  two_ints(padding, w.padding);
  TORCH_CHECK(dilation.size() == 1 || dilation.size() == 2, pool,
              ": dilation must be either a single int, or a tuple of two ints");
  two_ints(dilation, w.dilation);
  return w;
}

// grad_input's memory format: self's suggested one, which the CPU's meta
// functions accept only as contiguous or channels-last.
at::MemoryFormat checked_memory_format(const at::Tensor& self) {
  const at::MemoryFormat format = self.suggest_memory_format();
  if (format == at::MemoryFormat::ChannelsLast) {
    TORCH_CHECK(self.dim() == 4, "non-empty 4D (batch mode) tensor expected for input with channels_last layout");
  } else {
    TORCH_CHECK(self.dim() == 3 || self.dim() == 4, "non-empty 3D or 4D (batch mode) tensor expected for input");
  }
  return format;
}

// The pooled sizes (height, width) the CPU checks grad_output (and indices)
// against, each axis's checks raised in the CPU's order: the max pool's
// height first, the average pool's width first (after reading self's
// channels, an IndexError below 3 dims).
enum class AxisOrder { height_first, width_first };

std::pair<int64_t, int64_t> pooled_sizes(const at::Tensor& self, const PoolWindow& w, bool ceil_mode,
                                         AxisOrder order) {
  const auto along = [&](int axis) {
    return at::native::pooling_output_shape<int64_t>(self.size(axis - 2), w.kernel_size[axis], w.padding[axis],
                                                     w.stride[axis], w.dilation[axis], ceil_mode);
  };
  if (order == AxisOrder::height_first) {
    const int64_t height = along(0);
    return {height, along(1)};
  }
  (void)self.size(-3);
  const int64_t width = along(1);
  return {along(0), width};
}

// The CPU's pool2d_shape_check and its backward's dim checks of grad_output
// (and the max pool's indices) against the pooled sizes.
void check_pool2d_shapes(const at::Tensor& self, const at::Tensor& grad_output, const at::Tensor* indices,
                         const PoolWindow& w, int64_t out_height, int64_t out_width, at::MemoryFormat format) {
  const int kH = w.kernel_size[0], kW = w.kernel_size[1];
  TORCH_CHECK(kW > 0 && kH > 0, "kernel size should be greater than zero, but got kH: ", kH, " kW: ", kW);
  TORCH_CHECK(w.stride[0] > 0 && w.stride[1] > 0, "stride should be greater than zero, but got dH: ", w.stride[0],
              " dW: ", w.stride[1]);
  TORCH_CHECK(w.dilation[0] > 0 && w.dilation[1] > 0, "dilation should be greater than zero, but got dilationH: ",
              w.dilation[0], " dilationW: ", w.dilation[1]);
  const int64_t ndim = self.dim();
  const bool valid_dims = self.size(1) != 0 && self.size(2) != 0;
  if (format == at::MemoryFormat::ChannelsLast) {
    TORCH_CHECK(ndim == 4 && valid_dims && self.size(3) != 0,
                "Expected 4D (batch mode) tensor expected for input with channels_last layout with optional 0 dim "
                "batch size for input, but got: ", self.sizes());
  } else {
    TORCH_CHECK((ndim == 3 && self.size(0) != 0 && valid_dims) || (ndim == 4 && valid_dims && self.size(3) != 0),
                "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:",
                self.sizes());
  }
  TORCH_CHECK(kW / 2 >= w.padding[1] && kH / 2 >= w.padding[0],
              "pad should be smaller than or equal to half of kernel size, but got padW = ", w.padding[1],
              ", padH = ", w.padding[0], ", kW = ", kW, ", kH = ", kH);
  const int64_t channels = self.size(-3);
  TORCH_CHECK(out_width >= 1 && out_height >= 1, "Given input size: (", channels, "x", self.size(-2), "x",
              self.size(-1), "). Calculated output size: (", channels, "x", out_height, "x", out_width,
              "). Output size is too small");
  for (const at::Tensor* t : {&grad_output, indices}) {
    if (t != nullptr) {
      at::check_dim_size(*t, ndim, ndim - 3, channels);
      at::check_dim_size(*t, ndim, ndim - 2, out_height);
      at::check_dim_size(*t, ndim, ndim - 1, out_width);
    }
  }
  // The batch: the CPU's average pool never checks grad_output's against
  // self's (its kernel loops over grad_output's, reading and writing past
  // grad_input's end where that is longer); ours does, as the max pool's.
  if (ndim == 4) {
    at::check_dim_size(grad_output, ndim, 0, self.size(0));
    if (indices != nullptr) {
      at::check_dim_size(*indices, ndim, 0, self.size(0));
    }
  }
}

// grad_output in self's dtype (where the CPU checks it: the max pool's meta
// function, the average pool's kernel).
void check_grad_dtype(const at::Tensor& self, const at::Tensor& grad_output) {
  TORCH_CHECK(self.dtype() == grad_output.dtype(), "expected dtype ", self.dtype(),
              " for `gradOutput` but got dtype ", grad_output.dtype());
}

// The kernels' geometry over a 3-D or 4-D grad_input (N = 1 for 3-D);
// strides come with the pieces (dispatch_pieces).
pool2d_backward_geometry geometry_of(const at::Tensor& grad_input, const at::Tensor& grad_output,
                                     const PoolWindow& w) {
  pool2d_backward_geometry g{};
  g.batch = grad_input.dim() == 3 ? 1 : static_cast<unsigned>(grad_input.size(0));
  g.channels = static_cast<unsigned>(grad_input.size(-3));
  g.height = static_cast<unsigned>(grad_input.size(-2));
  g.width = static_cast<unsigned>(grad_input.size(-1));
  g.out_height = static_cast<unsigned>(grad_output.size(-2));
  g.out_width = static_cast<unsigned>(grad_output.size(-1));
  std::copy(w.kernel_size, w.kernel_size + 2, g.kernel_size);
  std::copy(w.stride, w.stride + 2, g.stride);
  std::copy(w.padding, w.padding + 2, g.padding);
  std::copy(w.dilation, w.dilation + 2, g.dilation);
  g.channels_last = grad_input.dim() == 4 && grad_input.size(1) > 1 && grad_input.stride(1) == 1;
  g.by_channels = make_fast_divisor(g.channels);
  g.by_height = make_fast_divisor(g.height);
  g.by_width = make_fast_divisor(g.width);
  g.by_stride[0] = make_fast_divisor(static_cast<unsigned>(w.stride[0]));
  g.by_stride[1] = make_fast_divisor(static_cast<unsigned>(w.stride[1]));
  return g;
}

// The 32-bit coordinates of the kernels: a batch entry holds fewer than
// 2**32 elements, and twice an axis's size plus its padding fits 32 bits (the
// kernels' padded coordinates, a window's end past the last one included).
void check_fits_kernel(const char* op, const at::Tensor& grad_input, const PoolWindow& w) {
  const int64_t entry = grad_input.size(-3) * grad_input.size(-2) * grad_input.size(-1);
  TORCH_CHECK(entry <= UINT32_MAX && 2 * (grad_input.size(-2) + 2 * int64_t{w.padding[0]}) <= UINT32_MAX &&
                  2 * (grad_input.size(-1) + 2 * int64_t{w.padding[1]}) <= UINT32_MAX,
              "mps_ops: ", op, " over more than 2**32 - 1 elements per batch entry");
}

// Threads per batch entry: one per element, or (runs of up to `per_thread`)
// one per run along grad_input's fastest axis (W, or C when channels-last),
// as the max pool's kernel takes them.
int64_t threads_per_entry(const pool2d_backward_geometry& g, unsigned per_thread) {
  const int64_t run_axis = g.channels_last ? g.channels : g.width;
  const int64_t entry = int64_t{g.channels} * g.height * g.width;
  return entry / run_axis * ((run_axis + per_thread - 1) / per_thread);
}

// The largest element offset in t over its first `entries` batch entries
// (torch's strides are never negative).
int64_t span_of(const at::Tensor& t, int64_t entries) {
  int64_t span = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    span += ((d == 0 && t.dim() == 4 ? entries : t.size(d)) - 1) * t.stride(d);
  }
  return span;
}

// t's strides as (N, C, H, W) (N's 0 for a 3-D t).
void strides_of(const at::Tensor& t, unsigned* strides) {
  const int64_t lead = 4 - t.dim();
  for (int64_t d = 0; d < 4; ++d) {
    strides[d] = d < lead ? 0 : static_cast<unsigned>(t.stride(d - lead));
  }
}

// Offsets are 32-bit in the kernels (a GPU does 64-bit integer arithmetic in
// two or more instructions, and holds its values in two registers): an
// input whose batch entry spans 2**32 elements or more is read contiguous,
// and pieces of whole batch entries keep every operand's offsets below
// 2**32 - 1 (so a piece's elements and threads number fewer than 2**32).
// `inputs` follow grad_input (each cut the same way along dim 0 when
// grad_input is 4-D: grad_output, then the indices), `flag` after it.
void dispatch_pieces(const char* op, KernelCache& kernels, const at::Tensor& grad_input, const KernelFlag* flag,
                     std::vector<at::Tensor> inputs, pool2d_backward_geometry g, unsigned per_thread) {
  if (grad_input.numel() == 0) {
    return;
  }
  constexpr int64_t limit = UINT32_MAX - 1;
  for (at::Tensor& t : inputs) {
    if (span_of(t, 1) > limit) {
      t = t.contiguous();
    }
  }
  // The whole batch in 64 bits (g.batch, 32-bit, holds a piece's): a batch of
  // 2**32 + 5 entries would otherwise run 5.
  const int64_t batch = grad_input.dim() == 3 ? 1 : grad_input.size(0);
  int64_t per_piece = batch;
  std::vector<const at::Tensor*> all{&grad_input};
  for (const at::Tensor& t : inputs) {
    all.push_back(&t);
  }
  for (const at::Tensor* t : all) {
    TORCH_CHECK(span_of(*t, 1) <= limit, "mps_ops: ", op, " over a batch entry of 2**32 or more elements");
    if (t->dim() == 4 && t->stride(0) > 0) {
      per_piece = std::min(per_piece, (limit - span_of(*t, 1)) / t->stride(0) + 1);
    }
  }
  strides_of(grad_input, g.in_strides);
  strides_of(inputs[0], g.out_strides);
  if (inputs.size() > 1) {
    strides_of(inputs[1], g.index_strides);
  }
  const int64_t run_axis = g.channels_last ? g.channels : g.width;  // 64-bit: a run count of 2**32 - 1 + K wraps
  g.by_runs = make_fast_divisor(static_cast<unsigned>((run_axis + per_thread - 1) / per_thread));
  for (int64_t start = 0; start < batch; start += per_piece) {
    const int64_t length = std::min(per_piece, batch - start);
    const auto cut = [&](const at::Tensor& t) { return grad_input.dim() == 4 ? t.narrow(0, start, length) : t; };
    g.batch = static_cast<unsigned>(length);
    KernelFunction function(kernels.get(Variant::dense, grad_input.scalar_type(), grad_input.scalar_type()));
    function.bind(cut(grad_input));
    if (flag != nullptr) {
      function.bind(*flag);
    }
    for (const at::Tensor& t : inputs) {
      function.bind(cut(t));
    }
    function.mark_operands();
    function.bind(g);
    function.dispatch(Dim3{static_cast<uint32_t>(length * threads_per_entry(g, per_thread)), 1, 1});
  }
}

}  // namespace

at::Tensor& max_pool2d_with_indices_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                                 at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                                 at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
                                                 const at::Tensor& indices, at::Tensor& grad_input) {
  constexpr const char* op = "max_pool2d_with_indices_backward";
  check_devices(op, {&grad_output, &self, &indices});
  const PoolWindow w = parse_window("max_pool2d", kernel_size, stride, padding, dilation);
  check_grad_dtype(self, grad_output);
  const at::MemoryFormat format = checked_memory_format(self);
  const auto [out_height, out_width] = pooled_sizes(self, w, ceil_mode, AxisOrder::height_first);
  check_pool2d_shapes(self, grad_output, &indices, w, out_height, out_width, format);
  // grad_input as the structured kernels' out: self's dtype and size (and,
  // resized, self's memory format).
  check_structured_output(op, grad_input, self.scalar_type(), self.sizes(), {&grad_output, &self, &indices}, self);
  check_dtype(op, self);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"max_pool2d_backward\" not implemented for '",
                              c10::toString(self.scalar_type()), "' on ", self.device());
  // The CPU reads indices as int64 (data_ptr<int64_t>), checking its dtype.
  TORCH_CHECK(indices.scalar_type() == at::kLong, op, ": expected scalar type Long for indices but found ",
              indices.scalar_type(), " on ", indices.device());
  check_fits_kernel(op, grad_input, w);
  const pool2d_backward_geometry g = geometry_of(grad_input, grad_output, w);
  // Set by the kernel where an index lies outside its cell's window.
  KernelFlag invalid;
  static KernelCache kernels("max_pool2d_backward");
  dispatch_pieces(op, kernels, grad_input, &invalid, {grad_output, indices}, g,
                  elements_per_thread(grad_input.element_size()));
  check_flag(op, std::move(invalid), [op](const KernelFlag& flag) {
    TORCH_CHECK(!flag.raised(), op,
                ": every index must name an element of its output cell's window (as max_pool2d_with_indices "
                "records it) or be -1");
  });
  return grad_input;
}

at::Tensor max_pool2d_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                            at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                            at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
                                            const at::Tensor& indices) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return max_pool2d_with_indices_backward_out(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode,
                                              indices, grad_input);
}

at::Tensor& avg_pool2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    at::IntArrayRef kernel_size, at::IntArrayRef stride, at::IntArrayRef padding,
                                    bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override,
                                    at::Tensor& grad_input) {
  constexpr const char* op = "avg_pool2d_backward";
  check_devices(op, {&grad_output, &self});
  const int64_t no_dilation[] = {1};
  const PoolWindow w = parse_window("avg_pool2d", kernel_size, stride, padding, no_dilation);
  TORCH_CHECK(!divisor_override.has_value() || divisor_override.value() != 0, "divisor must be not zero");
  const auto [out_height, out_width] = pooled_sizes(self, w, ceil_mode, AxisOrder::width_first);
  check_pool2d_shapes(self, grad_output, nullptr, w, out_height, out_width, self.suggest_memory_format());
  check_structured_output(op, grad_input, self.scalar_type(), self.sizes(), {&grad_output, &self}, self);
  check_grad_dtype(self, grad_output);
  check_dtype(op, self);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()) || self.scalar_type() == at::kLong,
                              "\"avg_pool2d_backward\" not implemented for '", c10::toString(self.scalar_type()),
                              "' on ", self.device());
  check_fits_kernel(op, grad_input, w);
  pool2d_backward_geometry g = geometry_of(grad_input, grad_output, w);
  g.divisor_override = divisor_override.value_or(0);
  g.count_include_pad = count_include_pad;
  static KernelCache kernels("avg_pool2d_backward");
  dispatch_pieces(op, kernels, grad_input, nullptr, {grad_output}, g, 1);
  return grad_input;
}

at::Tensor avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel_size,
                               at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                               bool count_include_pad, std::optional<int64_t> divisor_override) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return avg_pool2d_backward_out(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                 divisor_override, grad_input);
}

}  // namespace mps_ops
