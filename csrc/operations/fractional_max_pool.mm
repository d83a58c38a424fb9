// Host stubs of fractional_max_pool2d and fractional_max_pool3d with their
// backward (functional and out= forms); kernels in
// csrc/kernels/fractional_max_pool.metal (2-D runs as depth 1). The random
// samples come in as a tensor (nn.functional draws them from the device's
// generator), so the op itself is deterministic. Checks and messages are the
// CPU's.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/per_element.h"

#include "../kernels/fractional_max_pool_params.h"

#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstdint>

namespace mps_ops {

namespace {

// dims: 2 or 3 pooled dims.
// The input's dtype, checked after the shapes (the CPU's order).
void check_float_input(const char* op, const at::Tensor& self) {
  check_dtype(op, self);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(self.scalar_type()), "' on ", self.device());
}

// The CPU's alpha in the input's type T: T(span) / T(steps), rounded to T.
template <typename T>
float alpha_in(int64_t span, int64_t steps) {
  return static_cast<float>(static_cast<T>(static_cast<T>(static_cast<float>(span)) /
                                           static_cast<T>(static_cast<float>(steps))));
}

// The input's strides in elements: (batch, channel, t, h, w).
void set_strides(fractional_pool_params& p, const at::Tensor& self, int64_t dims) {
  const bool batched = self.dim() == dims + 2;
  p.in_strides[0] = batched ? self.stride(0) : 0;
  p.in_strides[1] = self.stride(batched ? 1 : 0);
  p.in_strides[2] = dims == 3 ? self.stride(-3) : 0;
  p.in_strides[3] = self.stride(-2);
  p.in_strides[4] = self.stride(-1);
}

// Elements between a plane's first and last element.
int64_t plane_span(const fractional_pool_params& p) {
  return (p.depth - 1) * p.in_strides[2] + (p.height - 1) * p.in_strides[3] + (p.width - 1) * p.in_strides[4];
}

fractional_pool_params pool_geometry(const char* op, int64_t dims, const at::Tensor& self,
                                     at::IntArrayRef kernel_size, at::IntArrayRef output_size) {
  check_device(op, self);
  TORCH_CHECK(static_cast<int64_t>(kernel_size.size()) == dims, op, ": kernel_size must either be a single ",
              "Int or tuple of ", dims, " Ints");
  TORCH_CHECK(static_cast<int64_t>(output_size.size()) == dims, op, ": output_size must either be a single ",
              "Int or tuple of ", dims, " Ints");
  TORCH_CHECK(self.dim() == dims + 1 || self.dim() == dims + 2, op, "(): Expected ", dims + 1, "D or ",
              dims + 2, "D tensor, but got: ", self.sizes());
  for (int64_t d = self.dim() - dims - 1; d < self.dim(); ++d) {
    TORCH_CHECK(self.size(d) > 0, op, "(): Expected input to have non-zero size for non-batch dimensions, ",
                "but got", self.sizes(), " with dimension ", d, " being empty.");
  }
  const bool batched = self.dim() == dims + 2;
  const int64_t c_dim = batched ? 1 : 0;
  fractional_pool_params p{};
  p.batch = batched ? self.size(0) : 1;
  p.channels = self.size(c_dim);
  p.depth = dims == 3 ? self.size(-3) : 1;
  p.height = self.size(-2);
  p.width = self.size(-1);
  p.pool_t = dims == 3 ? kernel_size[0] : 1;
  p.pool_h = kernel_size[dims - 2];
  p.pool_w = kernel_size[dims - 1];
  p.out_t = dims == 3 ? output_size[0] : 1;
  p.out_h = output_size[dims - 2];
  p.out_w = output_size[dims - 1];
  const char* names[3] = {"time", "height", "width"};
  const int64_t in[3] = {p.depth, p.height, p.width}, pool[3] = {p.pool_t, p.pool_h, p.pool_w},
                out[3] = {p.out_t, p.out_h, p.out_w};
  // The CPU's bounds: the last window may end at the input's end in 2-D,
  // but must end before it in 3-D.
  for (int a = 3 - static_cast<int>(dims); a < 3; ++a) {
    const int64_t end = out[a] + pool[a] - 1;
    TORCH_CHECK(dims == 2 ? end <= in[a] : end < in[a], op, "(): pool ", names[a], " ", pool[a],
                " too large relative to input ", names[a], " ", in[a]);
  }
  // The forward kernel's window coordinates and plane indices are 32-bit.
  TORCH_CHECK(p.depth * p.height * p.width <= INT32_MAX, "mps_ops: ", op,
              " over planes of more than 2**31 - 1 elements");
  set_strides(p, self, dims);
  for (int a = 0; a < 3; ++a) {
    p.alpha[a] = self.scalar_type() == at::kHalf       ? alpha_in<at::Half>(in[a] - pool[a], out[a] - 1)
                 : self.scalar_type() == at::kBFloat16 ? alpha_in<at::BFloat16>(in[a] - pool[a], out[a] - 1)
                                                       : alpha_in<float>(in[a] - pool[a], out[a] - 1);
  }
  p.sample_count = static_cast<int>(dims);
  // Sizes of at least 1 where anything is dispatched; 32-bit there (the
  // output count's bound).
  const auto divisor = [](int64_t size) {
    return make_fast_divisor(static_cast<unsigned>(std::clamp<int64_t>(size, 1, UINT32_MAX)));
  };
  p.by_out_w = divisor(p.out_w);
  p.by_out_h = divisor(p.out_h);
  p.by_out_t = divisor(p.out_t);
  p.by_channels = divisor(p.channels);
  return p;
}

std::vector<int64_t> pooled_shape(const at::Tensor& self, int64_t dims, at::IntArrayRef output_size) {
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end() - dims);
  shape.insert(shape.end(), output_size.begin(), output_size.end());
  return shape;
}

std::tuple<at::Tensor&, at::Tensor&> pool_out(const char* op, int64_t dims, const at::Tensor& self,
                                              at::IntArrayRef kernel_size, at::IntArrayRef output_size,
                                              const at::Tensor& random_samples, at::Tensor& output,
                                              at::Tensor& indices) {
  static KernelCache kernels("fractional_max_pool");
  fractional_pool_params p = pool_geometry(op, dims, self, kernel_size, output_size);
  check_device(op, random_samples);
  // The CPU's checks and order. A larger batch of samples is fine: planes
  // take theirs from the start, as on the CPU.
  TORCH_CHECK(random_samples.scalar_type() == self.scalar_type(),
              "Expect _random_samples to have the same dtype as input");
  TORCH_CHECK(random_samples.dim() == 3, "Expect _random_samples to have 3 dimensions, got ",
              random_samples.dim());
  TORCH_CHECK(random_samples.size(0) >= p.batch, "Expect _random_samples.size(0) no less then input batch size.");
  TORCH_CHECK(random_samples.size(1) == p.channels, "Expect _random_samples.size(1) equals to input channel size.");
  TORCH_CHECK(random_samples.size(2) == dims, "Expect _random_samples.size(2) equals to ", dims, "; got ",
              random_samples.size(2), ".");
  check_float_input(op, self);
  const auto shape = pooled_shape(self, dims, output_size);
  check_output(op, output, self.scalar_type(), shape, {&self, &random_samples});
  check_output(op, indices, at::kLong, shape, {&self, &random_samples, &output});
  const ContiguousOutput out(output), idx(indices);
  const at::Tensor samples = random_samples.contiguous();
  // The kernel's offsets inside a plane are 32-bit: a plane spread over more
  // (a strided view of a large plane) is read from a contiguous copy.
  at::Tensor input = self;
  if (plane_span(p) > INT32_MAX) {
    input = self.contiguous();
    set_strides(p, input, dims);
  }
  dispatch_per_element(kernels, out.tensor, {&out.tensor, &idx.tensor, &input, &samples}, p);
  out.copy_back();
  idx.copy_back();
  return {output, indices};
}

at::Tensor& pool_backward_out(const char* op, int64_t dims, const at::Tensor& grad_output,
                              const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef output_size,
                              const at::Tensor& indices, at::Tensor& grad_input) {
  static KernelCache kernels("fractional_max_pool_backward");
  // The CPU's backward reads self's plane and spatial sizes unchecked: too
  // few dims raise its IndexError.
  TORCH_CHECK_INDEX(self.dim() > dims, "Dimension out of range (", op, " expects self of ", dims + 1, " or ",
                    dims + 2, " dims, but got ", self.sizes(), ")");
  const fractional_pool_params p = pool_geometry(op, dims, self, kernel_size, output_size);
  // The CPU's 2-D backward is structured: grad_input must first have self's
  // dtype (its meta function allocates grad_input like self).
  if (dims == 2) check_out_dtype_first(self.scalar_type(), grad_input);
  check_float_input(op, self);
  // The CPU's 3-D backward reads grad_output's sizes at self's dims unchecked.
  TORCH_CHECK_INDEX(dims == 2 || grad_output.dim() >= self.dim(), "Dimension out of range (", op,
                    ": grad_output of ", grad_output.dim(), " dims for self of ", self.dim(), ")");
  check_device(op, grad_output);
  check_device(op, indices);
  const auto shape = pooled_shape(self, dims, output_size);
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(shape), op, "(): gradOutput sizes unexpected: expected ",
              at::IntArrayRef(shape), " but got ", grad_output.sizes());
  TORCH_CHECK(indices.sizes() == at::IntArrayRef(shape), op, "(): indices sizes unexpected: expected ",
              at::IntArrayRef(shape), " but got ", indices.sizes());
  TORCH_CHECK(grad_output.scalar_type() == self.scalar_type(), "expected scalar type ", self.scalar_type(),
              " but found ", grad_output.scalar_type());
  TORCH_CHECK(indices.scalar_type() == at::kLong, "expected scalar type Long but found ", indices.scalar_type());
  // Each index names an element of its (t, h, w) plane (the CPU asserts so).
  if (indices.numel() > 0) {
    const auto [lo, hi] = value_range(indices);
    TORCH_CHECK(lo >= 0 && hi < p.depth * p.height * p.width, op, "(): indices must lie in [0, ",
                p.depth * p.height * p.width, "), but got one of ", lo < 0 ? lo : hi);
  }
  check_output(op, grad_input, grad_output.scalar_type(), self.sizes(), {&grad_output, &self, &indices});
  const ContiguousOutput target(grad_input);
  const at::Tensor grad = grad_output.contiguous(), idx = indices.contiguous();
  dispatch_per_element(kernels, target.tensor, {&target.tensor, &grad, &idx}, p);
  target.copy_back();
  return grad_input;
}

}  // namespace

// The public entry points, one template per form over the spatial rank (2 or
// 3); the registry names fractional_max_pool_out<2> and so on.
template <int Rank>
constexpr const char* pool_name() {
  return Rank == 2 ? "fractional_max_pool2d" : "fractional_max_pool3d";
}
template <int Rank>
constexpr const char* pool_backward_name() {
  return Rank == 2 ? "fractional_max_pool2d_backward" : "fractional_max_pool3d_backward";
}

template <int Rank>
std::tuple<at::Tensor&, at::Tensor&> fractional_max_pool_out(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                             at::IntArrayRef output_size,
                                                             const at::Tensor& random_samples, at::Tensor& output,
                                                             at::Tensor& indices) {
  return pool_out(pool_name<Rank>(), Rank, self, kernel_size, output_size, random_samples, output, indices);
}

template <int Rank>
std::tuple<at::Tensor, at::Tensor> fractional_max_pool(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                       at::IntArrayRef output_size, const at::Tensor& random_samples) {
  at::Tensor output = at::empty({0}, self.options()), indices = at::empty({0}, self.options().dtype(at::kLong));
  pool_out(pool_name<Rank>(), Rank, self, kernel_size, output_size, random_samples, output, indices);
  return {output, indices};
}

template <int Rank>
at::Tensor& fractional_max_pool_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             at::IntArrayRef kernel_size, at::IntArrayRef output_size,
                                             const at::Tensor& indices, at::Tensor& grad_input) {
  return pool_backward_out(pool_backward_name<Rank>(), Rank, grad_output, self, kernel_size, output_size, indices,
                           grad_input);
}

template <int Rank>
at::Tensor fractional_max_pool_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                        at::IntArrayRef kernel_size, at::IntArrayRef output_size,
                                        const at::Tensor& indices) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return pool_backward_out(pool_backward_name<Rank>(), Rank, grad_output, self, kernel_size, output_size, indices,
                           grad_input);
}

}  // namespace mps_ops
