// Host stubs of adaptive 3-D average and max pooling, forward and backward,
// functional and out= forms; kernels in csrc/kernels/adaptive_pool3d.metal.
// Outputs are contiguous, as the CPU's are; checks and messages are the
// CPU's.
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/per_element.h"

#include "../kernels/include/mps_ops/params.h"

#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>

namespace mps_ops {

namespace {

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
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"", op,
                              "\" not implemented for '", c10::toString(self.scalar_type()), "' on ",
                              self.device());
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
  TORCH_CHECK(self.dim() == 4 || self.dim() == 5, op, ": expected a 4-D or 5-D self, but got ", self.sizes());
  for (int64_t d = 1; d < self.dim(); ++d) {
    TORCH_CHECK(self.size(d) > 0, op, "(): Expected self to have non-zero size for non-batch dimensions, ",
                "but self has sizes ", self.sizes(), " with dimension ", d, " being empty");
  }
  TORCH_CHECK(grad_output.dim() == self.dim(), op, ": Expected dimensions ", self.dim(),
              " for `gradOutput` but got dimensions ", grad_output.dim());
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
  // The CPU dispatches on self's dtype (NotImplementedError), then reads
  // grad_output as that dtype (RuntimeError).
  check_dtype(op, self);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(self.scalar_type()), "' on ", self.device());
  TORCH_CHECK(grad_output.scalar_type() == self.scalar_type(), "expected scalar type ", self.scalar_type(),
              " but found ", grad_output.scalar_type());
  if (indices != nullptr) {
    TORCH_CHECK(indices->scalar_type() == at::kLong, "expected scalar type Long but found ",
                indices->scalar_type());
  }
  if (indices != nullptr && indices->numel() > 0) {
    const int64_t cells = self.size(-3) * self.size(-2) * self.size(-1);
    const auto [lo, hi] = value_range(*indices);
    TORCH_CHECK(lo >= 0 && hi < cells, op, ": indices must lie in [0, ", cells, "), but got one of ",
                lo < 0 ? lo : hi);
  }
}

std::vector<int64_t> pooled_shape(const at::Tensor& self, at::IntArrayRef output_size) {
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end() - 3);
  shape.insert(shape.end(), output_size.begin(), output_size.end());
  return shape;
}

}  // namespace

at::Tensor& adaptive_avg_pool3d_out(const at::Tensor& self, c10::SymIntArrayRef output_size_,
                                    at::Tensor& out) {
  const at::IntArrayRef output_size = C10_AS_INTARRAYREF_SLOW(output_size_);
  check_pool_input("adaptive_avg_pool3d", self, output_size);
  check_device("adaptive_avg_pool3d", out);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "adaptive_avg_pool3d: expected out of dtype ",
              self.scalar_type(), " but got ", out.scalar_type());
  at::native::resize_output(out, pooled_shape(self, output_size));
  at::Tensor target = contiguous_target(out);
  pool3d_geometry g{};
  as_5d(self, g.in_sizes, g.in_strides);
  as_5d(target, g.out_sizes, g.out_strides);
  static KernelCache kernels("adaptive_avg_pool3d");
  dispatch_per_element(kernels, target, {&target, &self}, &g, sizeof(g));
  copy_back(out, target);
  return out;
}

at::Tensor _adaptive_avg_pool3d(const at::Tensor& self, c10::SymIntArrayRef output_size) {
  at::Tensor out = at::empty({0}, self.options());
  return adaptive_avg_pool3d_out(self, output_size, out);
}

at::Tensor& adaptive_avg_pool3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             at::Tensor& grad_input) {
  check_pool_backward("adaptive_avg_pool3d_backward", grad_output, self, nullptr);
  at::native::resize_output(grad_input, self.sizes());
  at::Tensor target = contiguous_target(grad_input);
  pool3d_geometry g{};
  as_5d(target, g.in_sizes, g.in_strides);
  as_5d(grad_output, g.out_sizes, g.out_strides);
  static KernelCache kernels("adaptive_avg_pool3d_backward");
  dispatch_per_element(kernels, target, {&target, &grad_output}, &g, sizeof(g));
  copy_back(grad_input, target);
  return grad_input;
}

at::Tensor _adaptive_avg_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  at::Tensor grad_input = at::empty(self.sizes(), grad_output.options());
  return adaptive_avg_pool3d_backward_out(grad_output, self, grad_input);
}

std::tuple<at::Tensor&, at::Tensor&> adaptive_max_pool3d_out(const at::Tensor& self,
                                                             at::IntArrayRef output_size,
                                                             at::Tensor& out, at::Tensor& indices) {
  check_pool_input("adaptive_max_pool3d", self, output_size);
  check_device("adaptive_max_pool3d", out);
  check_device("adaptive_max_pool3d", indices);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "adaptive_max_pool3d: expected out of dtype ",
              self.scalar_type(), " but got ", out.scalar_type());
  TORCH_CHECK(indices.scalar_type() == at::kLong, "adaptive_max_pool3d: expected indices of dtype Long",
              " but got ", indices.scalar_type());
  const auto shape = pooled_shape(self, output_size);
  at::native::resize_output(out, shape);
  at::native::resize_output(indices, shape);
  at::Tensor target = contiguous_target(out), index_target = contiguous_target(indices);
  pool3d_geometry g{};
  as_5d(self, g.in_sizes, g.in_strides);
  as_5d(target, g.out_sizes, g.out_strides);
  long unused[5];
  as_5d(index_target, unused, g.index_strides);
  static KernelCache kernels("adaptive_max_pool3d");
  dispatch_per_element(kernels, target, {&target, &index_target, &self}, &g, sizeof(g));
  copy_back(out, target);
  copy_back(indices, index_target);
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
  check_pool_backward("adaptive_max_pool3d_backward", grad_output, self, &indices);
  at::native::resize_output(grad_input, self.sizes());
  at::Tensor target = contiguous_target(grad_input);
  pool3d_geometry g{};
  as_5d(target, g.in_sizes, g.in_strides);
  as_5d(grad_output, g.out_sizes, g.out_strides);
  long unused[5];
  as_5d(indices, unused, g.index_strides);
  static KernelCache kernels("adaptive_max_pool3d_backward");
  dispatch_per_element(kernels, target, {&target, &grad_output, &indices}, &g, sizeof(g));
  copy_back(grad_input, target);
  return grad_input;
}

at::Tensor adaptive_max_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& indices) {
  at::Tensor grad_input = at::empty(self.sizes(), grad_output.options());
  return adaptive_max_pool3d_backward_out(grad_output, self, indices, grad_input);
}

}  // namespace mps_ops
