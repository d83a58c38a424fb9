// Host stubs of adaptive 3-D average and max pooling, forward and backward,
// functional and out= forms, and of adaptive 2-D average pooling (a repair:
// the stock MPS kernel raises where the input size is not a multiple of the
// output size), which runs the 3-D kernels with one depth cell; kernels in
// csrc/kernels/adaptive_pool3d.metal. 3-D outputs are contiguous, 2-D ones
// in the input's suggested memory format, as the CPU's are; checks and
// messages are the CPU's.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/error_checks.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/per_element.h"

#include "../kernels/adaptive_pool3d_params.h"
#include "../kernels/include/mps_ops/shape_limits.h"

#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>

#include <optional>

namespace mps_ops {

namespace {

// The CPU's pools have floating kernels only: its dtype dispatch's
// NotImplementedError for any other dtype.
void check_floating(const char* op, const at::Tensor& self) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(self.scalar_type()), "' on ", self.device());
}

void check_pool_input(const char* op, const at::Tensor& self, at::IntArrayRef output_size) {
  check_device(op, self);
  check_dtype(op, self);
  TORCH_CHECK(output_size.size() == 3, op, ": output_size must be 3");
  TORCH_CHECK(output_size[0] >= 0 && output_size[1] >= 0 && output_size[2] >= 0, op,
              ": elements of output_size must be greater than or equal to 0 but received {",
              output_size[0], ", ", output_size[1], ",", output_size[2], "}");
  TORCH_CHECK(self.dim() == 4 || self.dim() == 5, op, "(): Expected 4D or 5D tensor, but got ",
              self.sizes());
  for (int64_t d = 1; d < self.dim(); ++d) {
    TORCH_CHECK(self.size(d) > 0, op,
                "(): Expected input to have non-zero size for non-batch dimensions, but input has "
                "sizes ", self.sizes(), " with dimension ", d, " being empty");
  }
  check_floating(op, self);
}

// Sizes and strides as 5-D: a 4-D (C, D, H, W) tensor gets N = 1.
void as_5d(const at::Tensor& t, long* sizes, long* strides) {
  const int64_t lead = 5 - t.dim();
  for (int64_t d = 0; d < 5; ++d) {
    sizes[d] = d < lead ? 1 : t.size(d - lead);
    strides[d] = d < lead ? 0 : t.stride(d - lead);
  }
}

// A backward's grad_output (and indices) against self: the CPU's checks of
// dims, empty sizes and dtypes, and ours of the batch and channel sizes and
// of the indices' range (the CPU reads and writes outside its tensors there).
void check_pool_backward(const char* op, const at::Tensor& grad_output, const at::Tensor& self,
                         const at::Tensor* indices) {
  check_device(op, grad_output);
  check_device(op, self);
  // The CPU's order: grad_output's dims (the max pool: 4 or 5), then
  // self's last four sizes, read unchecked (IndexError below 4 dims).
  TORCH_CHECK(indices == nullptr || grad_output.dim() == 4 || grad_output.dim() == 5, op,
              "(): Expected 4D or 5D gradOutput, but got: ", grad_output.sizes());
  TORCH_CHECK(grad_output.dim() == self.dim(), op, ": Expected dimensions ", self.dim(),
              " for `gradOutput` but got dimensions ", grad_output.dim());
  TORCH_CHECK_INDEX(self.dim() >= 4, "Dimension out of range (", op, " expects a 4-D or 5-D self, but got ",
                    self.sizes(), ")");
  TORCH_CHECK(self.dim() == 4 || self.dim() == 5, op, ": expected a 4-D or 5-D self, but got ", self.sizes());
  for (int64_t d = 1; d < self.dim(); ++d) {
    TORCH_CHECK(self.size(d) > 0, op, "(): Expected self to have non-zero size for non-batch dimensions, ",
                "but self has sizes ", self.sizes(), " with dimension ", d, " being empty");
  }
  for (int64_t d = 1; d < grad_output.dim(); ++d) {
    TORCH_CHECK(grad_output.size(d) > 0, op, "(): Expected grad_output to have non-zero size for non-batch ",
                "dimensions, but grad_output has sizes ", grad_output.sizes(), " with dimension ", d,
                " being empty");
  }
  TORCH_CHECK(grad_output.sizes().slice(0, self.dim() - 3) == self.sizes().slice(0, self.dim() - 3), op,
              ": expected grad_output's batch and channel sizes ", self.sizes().slice(0, self.dim() - 3),
              " (self's), but got ", grad_output.sizes());
  if (indices != nullptr) {
    check_device(op, *indices);
    TORCH_CHECK(indices->sizes() == grad_output.sizes(), "expected sizes ", indices->sizes(),
                " for `gradOutput` but got sizes ", grad_output.sizes());
  }
  // The CPU's order: the max pool checks grad_output's dtype, then
  // dispatches on self's (NotImplementedError); the average pool dispatches
  // first, then reads grad_output as self's dtype (RuntimeError).
  const bool grad_dtype_first = indices != nullptr;
  auto check_grad_dtype = [&] {
    TORCH_CHECK(grad_output.scalar_type() == self.scalar_type(), "expected scalar type ", self.scalar_type(),
                " but found ", grad_output.scalar_type());
  };
  if (grad_dtype_first) {
    check_grad_dtype();
  }
  check_dtype(op, self);
  check_floating(op, self);
  if (!grad_dtype_first) {
    check_grad_dtype();
  }
  if (indices != nullptr) {
    TORCH_CHECK(indices->scalar_type() == at::kLong, "expected scalar type Long but found ",
                indices->scalar_type());
  }
}

// self's leading (batch, channel) sizes, then output_size in place of the
// pooled dims (3 for the 3-D pools, 2 for the 2-D one).
std::vector<int64_t> pooled_shape(const at::Tensor& self, at::IntArrayRef output_size) {
  std::vector<int64_t> shape(self.sizes().begin(),
                             self.sizes().end() - static_cast<std::ptrdiff_t>(output_size.size()));
  shape.insert(shape.end(), output_size.begin(), output_size.end());
  return shape;
}

// The average pools' backward kernel counts in 32 bits (one thread per
// grad_input element, cell bounds from 32-bit sizes).
void check_backward_fits_32_bits(const char* op, const pool3d_geometry& g, int64_t numel) {
  TORCH_CHECK(numel <= UINT32_MAX && g.out_sizes[2] <= UINT32_MAX && g.out_sizes[3] <= UINT32_MAX &&
                  g.out_sizes[4] <= UINT32_MAX,
              "mps_ops: ", op, " over more than 2**32 - 1 elements or cells along an axis");
}

// A 3-D (C, H, W) or 4-D (N, C, H, W) tensor as the 3-D kernels' 5-D
// (N, C, 1, H, W): one depth cell covering the one input plane.
void as_5d_from_2d(const at::Tensor& t, long* sizes, long* strides) {
  const bool batched = t.dim() == 4;
  sizes[0] = batched ? t.size(0) : 1;
  strides[0] = batched ? t.stride(0) : 0;
  sizes[1] = t.size(-3);
  strides[1] = t.stride(-3);
  sizes[2] = 1;
  strides[2] = 0;
  for (int64_t d = 3; d < 5; ++d) {
    sizes[d] = t.size(d - 5);
    strides[d] = t.stride(d - 5);
  }
}

// The CPU's checks of adaptive_avg_pool2d's input, in its order (a
// negative size: the composite adaptive_avg_pool2d's message).
void check_pool2d_input(const at::Tensor& self, at::IntArrayRef output_size) {
  constexpr const char* op = "adaptive_avg_pool2d";
  check_device(op, self);
  TORCH_CHECK(output_size.size() == 2, op, ": output_size must be 2");
  TORCH_CHECK(output_size[0] >= 0 && output_size[1] >= 0, op,
              ": elements of output_size must be greater than or equal to 0 but received {", output_size[0], ", ",
              output_size[1], "}");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, op, "(): Expected 3D or 4D tensor, but got ", self.sizes());
  for (const int64_t d : {self.dim() - 2, self.dim() - 1}) {
    TORCH_CHECK(self.size(d) > 0, op, "(): Expected input to have non-zero size for non-batch dimensions, but "
                "input has sizes ", self.sizes(), " with dimension ", d, " being empty");
  }
  check_dtype(op, self);
  check_floating(op, self);
}

// A 4-D output takes the input's suggested memory format (channels-last in,
// channels-last out), whatever its strides were, as the CPU's resize_ with
// a memory format does.
void restride_like(at::Tensor& out, const at::Tensor& like) {
  if (like.dim() == 4) {
    out.unsafeGetTensorImpl()->empty_tensor_restride(like.suggest_memory_format());
  }
}

// The kernels write through the output's strides: a dense output of the
// right dtype (contiguous or channels-last) is written in place.
at::Tensor writable(const at::Tensor& out, std::optional<ContiguousOutput>& stand_in) {
  if (out.is_non_overlapping_and_dense()) {
    return out;
  }
  stand_in.emplace(out);
  return stand_in->tensor;
}

}  // namespace

at::Tensor& adaptive_avg_pool2d_out(const at::Tensor& self, c10::SymIntArrayRef output_size_, at::Tensor& out) {
  const at::IntArrayRef output_size = C10_AS_INTARRAYREF_SLOW(output_size_);
  check_out_dtype_first(self.scalar_type(), out);
  check_pool2d_input(self, output_size);
  const auto shape = pooled_shape(self, output_size);
  check_output("adaptive_avg_pool2d", out, self.scalar_type(), shape, {&self});
  restride_like(out, self);
  // Restrided, out covers other memory: checked again.
  check_no_aliasing(out, {&self});
  if (out.numel() == 0) {
    return out;
  }
  std::optional<ContiguousOutput> stand_in;
  const at::Tensor target = writable(out, stand_in);
  pool3d_geometry g{};
  as_5d_from_2d(self, g.in_sizes, g.in_strides);
  as_5d_from_2d(target, g.out_sizes, g.out_strides);
  static KernelCache kernels("adaptive_avg_pool3d");
  dispatch_per_element(kernels, target, {&target, &self}, g);
  if (stand_in) {
    stand_in->copy_back();
  }
  return out;
}

at::Tensor _adaptive_avg_pool2d(const at::Tensor& self, c10::SymIntArrayRef output_size) {
  at::Tensor out = at::empty({0}, self.options());
  return adaptive_avg_pool2d_out(self, output_size, out);
}

// The CPU's checks, in its order; and one it lacks: it reads grad_output's
// batch and channel sizes as self's, unchecked (ours refuses others, as the
// 3-D backward does).
at::Tensor _adaptive_avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  constexpr const char* op = "adaptive_avg_pool2d_backward";
  check_device(op, grad_output);
  check_device(op, self);
  for (int64_t d = 1; d < grad_output.dim(); ++d) {
    TORCH_CHECK(grad_output.size(d) > 0, op, "(): Expected grad_output to have non-zero size for non-batch "
                "dimensions, but grad_output has sizes ", grad_output.sizes(), " with dimension ", d, " being empty");
  }
  TORCH_CHECK(self.dim() == grad_output.dim(), op, ": Expected dimensions ", self.dim(),
              " for `grad_output` but got dimensions ", grad_output.dim());
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, op, ": Expected 3D or 4D tensor, but got ", self.sizes());
  // (The CPU divides by an empty plane's size and crashes.)
  for (const int64_t d : {self.dim() - 2, self.dim() - 1}) {
    TORCH_CHECK(self.size(d) > 0, op, "(): Expected self to have non-zero size for non-batch dimensions, but self "
                "has sizes ", self.sizes(), " with dimension ", d, " being empty");
  }
  TORCH_CHECK(self.dtype() == grad_output.dtype(), op, ": Expected dtype ", self.dtype(),
              " for `grad_output` but got dtype ", grad_output.dtype());
  check_dtype(op, self);
  check_floating(op, self);
  TORCH_CHECK(self.sizes().slice(0, self.dim() - 2) == grad_output.sizes().slice(0, grad_output.dim() - 2), op,
              ": expected grad_output's batch and channel sizes ", self.sizes().slice(0, self.dim() - 2),
              " (self's), but got ", grad_output.sizes());
  at::Tensor grad_input = at::empty(self.sizes(), grad_output.options().memory_format(
                                                      self.dim() == 4 ? self.suggest_memory_format()
                                                                      : at::MemoryFormat::Contiguous));
  if (grad_input.numel() == 0) {
    return grad_input;
  }
  pool3d_geometry g{};
  as_5d_from_2d(grad_input, g.in_sizes, g.in_strides);
  as_5d_from_2d(grad_output, g.out_sizes, g.out_strides);
  check_backward_fits_32_bits(op, g, grad_input.numel());
  static KernelCache kernels("adaptive_avg_pool3d_backward");
  dispatch_per_element(kernels, grad_input, {&grad_input, &grad_output}, g);
  return grad_input;
}

at::Tensor& adaptive_avg_pool3d_out(const at::Tensor& self, c10::SymIntArrayRef output_size_,
                                    at::Tensor& out) {
  const at::IntArrayRef output_size = C10_AS_INTARRAYREF_SLOW(output_size_);
  check_out_dtype_first(self.scalar_type(), out);
  check_pool_input("adaptive_avg_pool3d", self, output_size);
  check_output("adaptive_avg_pool3d", out, self.scalar_type(), pooled_shape(self, output_size), {&self});
  const ContiguousOutput target(out);
  pool3d_geometry g{};
  as_5d(self, g.in_sizes, g.in_strides);
  as_5d(target.tensor, g.out_sizes, g.out_strides);
  static KernelCache kernels("adaptive_avg_pool3d");
  dispatch_per_element(kernels, target.tensor, {&target.tensor, &self}, g);
  target.copy_back();
  return out;
}

at::Tensor _adaptive_avg_pool3d(const at::Tensor& self, c10::SymIntArrayRef output_size) {
  at::Tensor out = at::empty({0}, self.options());
  return adaptive_avg_pool3d_out(self, output_size, out);
}

at::Tensor& adaptive_avg_pool3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             at::Tensor& grad_input) {
  check_pool_backward("adaptive_avg_pool3d_backward", grad_output, self, nullptr);
  check_output("adaptive_avg_pool3d_backward", grad_input, grad_output.scalar_type(), self.sizes(),
               {&grad_output, &self});
  const ContiguousOutput target(grad_input);
  pool3d_geometry g{};
  as_5d(target.tensor, g.in_sizes, g.in_strides);
  as_5d(grad_output, g.out_sizes, g.out_strides);
  check_backward_fits_32_bits("adaptive_avg_pool3d_backward", g, target.tensor.numel());
  static KernelCache kernels("adaptive_avg_pool3d_backward");
  dispatch_per_element(kernels, target.tensor, {&target.tensor, &grad_output}, g);
  target.copy_back();
  return grad_input;
}

at::Tensor _adaptive_avg_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  at::Tensor grad_input = at::empty(self.sizes(), grad_output.options());
  return adaptive_avg_pool3d_backward_out(grad_output, self, grad_input);
}

std::tuple<at::Tensor&, at::Tensor&> adaptive_max_pool3d_out(const at::Tensor& self,
                                                             at::IntArrayRef output_size,
                                                             at::Tensor& out, at::Tensor& indices) {
  check_out_dtype_first(self.scalar_type(), out);
  check_pool_input("adaptive_max_pool3d", self, output_size);
  const auto shape = pooled_shape(self, output_size);
  check_output("adaptive_max_pool3d", out, self.scalar_type(), shape, {&self});
  check_output("adaptive_max_pool3d", indices, at::kLong, shape, {&self, &out});
  const ContiguousOutput target(out), index_target(indices);
  pool3d_geometry g{};
  as_5d(self, g.in_sizes, g.in_strides);
  as_5d(target.tensor, g.out_sizes, g.out_strides);
  long unused[5];
  as_5d(index_target.tensor, unused, g.index_strides);
  static KernelCache kernels("adaptive_max_pool3d");
  dispatch_per_element(kernels, target.tensor, {&target.tensor, &index_target.tensor, &self}, g);
  target.copy_back();
  index_target.copy_back();
  return {out, indices};
}

std::tuple<at::Tensor, at::Tensor> adaptive_max_pool3d(const at::Tensor& self, at::IntArrayRef output_size) {
  at::Tensor out = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  adaptive_max_pool3d_out(self, output_size, out, indices);
  return {out, indices};
}

at::Tensor& adaptive_max_pool3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             const at::Tensor& indices, at::Tensor& grad_input) {
  check_out_dtype_first(grad_output.scalar_type(), grad_input);
  check_pool_backward("adaptive_max_pool3d_backward", grad_output, self, &indices);
  check_output("adaptive_max_pool3d_backward", grad_input, grad_output.scalar_type(), self.sizes(),
               {&grad_output, &self, &indices});
  const ContiguousOutput target(grad_input);
  pool3d_geometry g{};
  as_5d(target.tensor, g.in_sizes, g.in_strides);
  as_5d(grad_output, g.out_sizes, g.out_strides);
  long unused[5];
  as_5d(indices, unused, g.index_strides);
  const int64_t numel = target.tensor.numel();
  if (numel == 0) {
    return grad_input;
  }
  // 32-bit coordinates in the kernel: every input size and element count,
  // and every output size, fits 32 bits; a thread counts the cells covering
  // its run (at most one output plane's) in 32 bits too, B past the last.
  TORCH_CHECK(numel <= UINT32_MAX && g.out_sizes[2] <= UINT32_MAX && g.out_sizes[3] <= UINT32_MAX &&
                  g.out_sizes[4] <= UINT32_MAX && g.out_sizes[2] * g.out_sizes[3] * g.out_sizes[4] <= INT32_MAX,
              "mps_ops: adaptive_max_pool3d_backward over more than 2**32 - 1 elements or 2**31 - 1 cells a plane");
  // One thread per run of up to K elements along W (the kernel says why).
  const int64_t per_thread = elements_per_thread(grad_output.element_size());
  const int64_t width = g.in_sizes[4];
  const int64_t runs = (width + per_thread - 1) / per_thread;
  const int64_t threads = numel / width * runs;
  // The kernel's divisions, and whether every cell-bound numerator (at
  // most in * out + in + out - 1 along an axis) fits 32 bits: the narrow
  // kernel divides those by these too.
  bool narrow = true;
  for (int axis = 0; axis < 3; ++axis) {
    const int64_t in = g.in_sizes[2 + axis], out = g.out_sizes[2 + axis];
    g.by_in[axis] = make_fast_divisor(static_cast<unsigned>(in));
    g.by_out[axis] = make_fast_divisor(static_cast<unsigned>(std::max<int64_t>(out, 1)));  // 0 cells: never divided
    narrow = narrow && in + 1 <= int64_t{UINT32_MAX} / (out + 1);  // (in + 1)(out + 1) <= 2**32 - 1
  }
  // ... and whether grad_output's and indices' (n, c) planes span fewer
  // than 2**32 elements: the narrow kernel's offsets inside them are 32-bit.
  // (long, the params header's type: int64_t is long long on macOS.)
  for (const long* strides : {g.out_strides, g.index_strides}) {
    int64_t span = 1;
    for (int d = 2; d < 5; ++d) {
      span += (g.out_sizes[d] - 1) * strides[d];
    }
    narrow = narrow && span <= int64_t{UINT32_MAX};
  }
  g.by_channels = make_fast_divisor(static_cast<unsigned>(g.in_sizes[1]));
  g.by_runs = make_fast_divisor(static_cast<unsigned>(runs));
  // Set by the kernel where an index lies outside its cell's window: the
  // backward gathers each element's gradient from the cells whose windows
  // cover it, so such an index would be dropped where the CPU scatters it
  // anywhere (even outside the tensor).
  KernelFlag invalid;
  static KernelCache narrow_kernels("adaptive_max_pool3d_backward");
  static KernelCache wide_kernels("adaptive_max_pool3d_backward_wide");
  KernelCache& kernels = narrow ? narrow_kernels : wide_kernels;
  KernelFunction function(kernels.get(Variant::dense, grad_output.scalar_type(), grad_output.scalar_type()));
  function.bind_operands(target.tensor, invalid, grad_output, indices).bind(g);
  function.dispatch(Dim3{static_cast<uint32_t>(threads), 1, 1});
  // Raising at the call, before the copy: an out= is left as it was.
  check_flag("adaptive_max_pool3d_backward", std::move(invalid), [](const KernelFlag& flag) {
    TORCH_CHECK(!flag.raised(), "adaptive_max_pool3d_backward: every index must name an element of its "
                "output cell's window (as adaptive_max_pool3d records it)");
  });
  target.copy_back();
  return grad_input;
}

at::Tensor adaptive_max_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& indices) {
  at::Tensor grad_input = at::empty(self.sizes(), grad_output.options());
  return adaptive_max_pool3d_backward_out(grad_output, self, indices, grad_input);
}

}  // namespace mps_ops
