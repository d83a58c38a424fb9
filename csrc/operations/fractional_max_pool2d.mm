// Host stubs of fractional_max_pool2d and its backward (functional and out=
// forms); kernels in csrc/kernels/fractional_max_pool2d.metal. The random
// samples come in as a tensor (nn.functional draws them from the device's
// generator), so the op itself is deterministic. Checks and messages are the
// CPU's.
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include "../kernels/include/mps_ops/params.h"

#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>

namespace mps_ops {

namespace {

fractional_pool2d_params pool_geometry(const char* op, const at::Tensor& self, at::IntArrayRef kernel_size,
                                       at::IntArrayRef output_size) {
  check_device(op, self);
  check_dtype(op, self);
  TORCH_CHECK(kernel_size.size() == 2, "fractional_max_pool2d: kernel_size must either be a single Int ",
              "or tuple of Ints");
  TORCH_CHECK(output_size.size() == 2, "fractional_max_pool2d: output_size must either be a single Int ",
              "or tuple of Ints");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, "fractional_max_pool2d(): Expected 3D or 4D tensor, but got: ",
              self.sizes());
  for (int64_t d = 1; d < self.dim(); ++d) {
    TORCH_CHECK(self.size(d) > 0, "fractional_max_pool2d(): Expected input to have non-zero size for ",
                "non-batch dimensions, but got", self.sizes(), " with dimension ", d, " being empty.");
  }
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"fractional_max_pool2d_out_frame\" ",
                              "not implemented for '", c10::toString(self.scalar_type()), "' on ", self.device());
  const bool batched = self.dim() == 4;
  fractional_pool2d_params p{};
  p.batch = batched ? self.size(0) : 1;
  p.channels = self.size(-3);
  p.height = self.size(-2);
  p.width = self.size(-1);
  p.pool_h = kernel_size[0];
  p.pool_w = kernel_size[1];
  p.out_h = output_size[0];
  p.out_w = output_size[1];
  TORCH_CHECK(p.out_h + p.pool_h - 1 <= p.height, "fractional_max_pool2d(): pool height ", p.pool_h,
              " too large relative to input height ", p.height);
  TORCH_CHECK(p.out_w + p.pool_w - 1 <= p.width, "fractional_max_pool2d(): pool width ", p.pool_w,
              " too large relative to input width ", p.width);
  p.in_strides[0] = batched ? self.stride(0) : 0;
  p.in_strides[1] = self.stride(-3);
  p.in_strides[2] = self.stride(-2);
  p.in_strides[3] = self.stride(-1);
  return p;
}

std::vector<int64_t> pooled_shape(const at::Tensor& self, const fractional_pool2d_params& p) {
  return self.dim() == 4 ? std::vector<int64_t>{p.batch, p.channels, p.out_h, p.out_w}
                         : std::vector<int64_t>{p.channels, p.out_h, p.out_w};
}

void dispatch_pool(KernelCache& kernels, const at::Tensor& grid_like,
                   std::initializer_list<const at::Tensor*> operands, const fractional_pool2d_params& p) {
  if (grid_like.numel() == 0) {
    return;
  }
  TORCH_CHECK(grid_like.numel() <= UINT32_MAX, "mps_ops: ", kernels.op(), " over more than 2**32 - 1 elements");
  KernelFunction function(kernels.get(Variant::dense, grid_like.scalar_type(), grid_like.scalar_type()));
  int slot = 0;
  for (const at::Tensor* t : operands) {
    function.set_tensor(slot++, *t);
  }
  function.set_operand_count(slot);
  function.set_value(slot, p);
  function.dispatch(Dim3{static_cast<uint32_t>(grid_like.numel()), 1, 1});
}

at::Tensor contiguous_target(const at::Tensor& out) {
  return out.is_contiguous() ? out : at::empty(out.sizes(), out.options());
}

}  // namespace

std::tuple<at::Tensor&, at::Tensor&> fractional_max_pool2d_out(const at::Tensor& self,
                                                               at::IntArrayRef kernel_size,
                                                               at::IntArrayRef output_size,
                                                               const at::Tensor& random_samples,
                                                               at::Tensor& output, at::Tensor& indices) {
  static KernelCache kernels("fractional_max_pool2d");
  const fractional_pool2d_params p = pool_geometry("fractional_max_pool2d", self, kernel_size, output_size);
  check_device("fractional_max_pool2d", random_samples);
  check_device("fractional_max_pool2d", output);
  check_device("fractional_max_pool2d", indices);
  TORCH_CHECK(random_samples.scalar_type() == self.scalar_type() && random_samples.dim() == 3 &&
                  random_samples.size(0) == p.batch && random_samples.size(1) == p.channels &&
                  random_samples.size(2) == 2,
              "fractional_max_pool2d(): expected random_samples of shape (", p.batch, ", ", p.channels,
              ", 2) and dtype ", self.scalar_type(), ", but got ", random_samples.sizes(), " ",
              random_samples.scalar_type());
  TORCH_CHECK(output.scalar_type() == self.scalar_type() && indices.scalar_type() == at::kLong,
              "fractional_max_pool2d: expected output of dtype ", self.scalar_type(), " and Long indices");
  const auto shape = pooled_shape(self, p);
  at::native::resize_output(output, shape);
  at::native::resize_output(indices, shape);
  at::Tensor out = contiguous_target(output), idx = contiguous_target(indices);
  const at::Tensor samples = random_samples.contiguous();
  dispatch_pool(kernels, out, {&out, &idx, &self, &samples}, p);
  if (!out.is_same(output)) {
    output.copy_(out);
  }
  if (!idx.is_same(indices)) {
    indices.copy_(idx);
  }
  return {output, indices};
}

std::tuple<at::Tensor, at::Tensor> fractional_max_pool2d(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                         at::IntArrayRef output_size,
                                                         const at::Tensor& random_samples) {
  at::Tensor output = at::empty({0}, self.options()), indices = at::empty({0}, self.options().dtype(at::kLong));
  fractional_max_pool2d_out(self, kernel_size, output_size, random_samples, output, indices);
  return {output, indices};
}

at::Tensor& fractional_max_pool2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                               at::IntArrayRef kernel_size, at::IntArrayRef output_size,
                                               const at::Tensor& indices, at::Tensor& grad_input) {
  static KernelCache kernels("fractional_max_pool2d_backward");
  const fractional_pool2d_params p =
      pool_geometry("fractional_max_pool2d_backward", self, kernel_size, output_size);
  check_device("fractional_max_pool2d_backward", grad_output);
  check_device("fractional_max_pool2d_backward", indices);
  check_device("fractional_max_pool2d_backward", grad_input);
  const auto shape = pooled_shape(self, p);
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(shape) && indices.sizes() == at::IntArrayRef(shape),
              "fractional_max_pool2d_backward(): gradOutput and indices must have the output's shape ",
              at::IntArrayRef(shape));
  TORCH_CHECK(grad_output.scalar_type() == self.scalar_type() && indices.scalar_type() == at::kLong,
              "fractional_max_pool2d_backward: expected grad_output of dtype ", self.scalar_type(),
              " and Long indices");
  at::native::resize_output(grad_input, self.sizes());
  at::Tensor target = contiguous_target(grad_input);
  const at::Tensor grad = grad_output.contiguous(), idx = indices.contiguous();
  dispatch_pool(kernels, target, {&target, &grad, &idx}, p);
  if (!target.is_same(grad_input)) {
    grad_input.copy_(target);
  }
  return grad_input;
}

at::Tensor fractional_max_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                          at::IntArrayRef kernel_size, at::IntArrayRef output_size,
                                          const at::Tensor& indices) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return fractional_max_pool2d_backward_out(grad_output, self, kernel_size, output_size, indices, grad_input);
}

}  // namespace mps_ops
