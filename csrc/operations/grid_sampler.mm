// Host stub of grid_sampler_2d_backward: a `fill` op (torch 2.9 to 2.12 have
// no MPS kernel for it, so grid_sample's gradient raised on a Mac). Kernel in
// csrc/kernels/grid_sampler.metal. Checks and messages are the CPU's
// (GridSampler.cpp's check_grid_sampler_common and _2d), in its order;
// grad_input comes out contiguous and grad_grid like the grid, as the CPU's.
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include "../kernels/grid_sampler_params.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <array>
#include <tuple>

namespace mps_ops {

namespace {

constexpr const char* grid_op = "grid_sampler_2d_backward";

// The CPU's shape checks (its backward's, which leave the dtypes to its
// dtype dispatch and its typed reads), in its order.
void check_grid_sampler_2d_shapes(const at::Tensor& input, const at::Tensor& grid) {
  TORCH_CHECK_INDEX(input.dim() > 0 && grid.dim() > 0, "Dimension specified as 0 but tensor has no dimensions (",
                    grid_op, ")");
  TORCH_CHECK(input.size(0) == grid.size(0),
              "grid_sampler(): expected grid and input to have same batch size, but got input with sizes ",
              input.sizes(), " and grid with sizes ", grid.sizes());
  TORCH_CHECK(grid.size(-1) == input.dim() - 2, "grid_sampler(): expected grid to have size ", input.dim() - 2,
              " in last dimension, but got grid with sizes ", grid.sizes());
  for (int64_t i = 2; i < input.dim(); ++i) {
    TORCH_CHECK(input.size(i) > 0, "grid_sampler(): expected input to have non-empty spatial dimensions, but input has ",
                "sizes ", input.sizes(), " with dimension ", i, " being empty");
  }
  TORCH_CHECK(input.dim() == 4 && grid.dim() == 4, "grid_sampler(): expected 4D input and grid with same number of ",
              "dimensions, but got input with sizes ", input.sizes(), " and grid with sizes ", grid.sizes());
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> grid_sampler_2d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                                            const at::Tensor& grid, int64_t interpolation_mode,
                                                            int64_t padding_mode, bool align_corners,
                                                            std::array<bool, 2> output_mask) {
  // One kernel per interpolation mode (grid_sampler.metal says why).
  static KernelCache kernels[] = {KernelCache("grid_sampler_2d_backward_bilinear"),
                                  KernelCache("grid_sampler_2d_backward_nearest"),
                                  KernelCache("grid_sampler_2d_backward_bicubic")};
  check_devices(grid_op, {&grad_output, &input, &grid});
  // The CPU's order: its shape checks, its dtype dispatch (the input's),
  // then its reads of the grid and grad_output as the input's dtype; what it
  // leaves unchecked (modes outside its enums, grad_output's size) raises.
  check_grid_sampler_2d_shapes(input, grid);
  const c10::ScalarType dtype = input.scalar_type();
  check_dtype(grid_op, input);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(dtype), "\"grid_sampler_2d_backward\" not implemented for '",
                              c10::toString(dtype), "' on ", input.device());
  for (const at::Tensor* t : {&grid, &grad_output}) {
    TORCH_CHECK(t->scalar_type() == dtype, "expected scalar type ", dtype, " but found ", t->scalar_type(), " (",
                grid_op, " on ", input.device(), ")");
  }
  TORCH_CHECK(interpolation_mode >= grid_bilinear && interpolation_mode <= grid_bicubic, grid_op,
              ": interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got ", interpolation_mode);
  TORCH_CHECK(padding_mode >= grid_pad_zeros && padding_mode <= grid_pad_reflection, grid_op,
              ": padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got ", padding_mode);
  const int64_t batch = input.size(0), channels = input.size(1), out_h = grid.size(1), out_w = grid.size(2);
  // What the CPU reads unchecked (past the end of a smaller one).
  TORCH_CHECK(grad_output.dim() == 4 && grad_output.size(0) == batch && grad_output.size(1) == channels &&
                  grad_output.size(2) == out_h && grad_output.size(3) == out_w,
              grid_op, ": grad_output of size ", grad_output.sizes(), " for ", batch, " x ", channels,
              " channels sampled at ", out_h, " x ", out_w, " points");
  const auto float_options = input.options().dtype(at::kFloat).memory_format(at::MemoryFormat::Contiguous);
  // grad_input accumulates in float; for a float input that is the result.
  at::Tensor accumulated = output_mask[0] ? at::zeros(input.sizes(), float_options) : at::Tensor();
  at::Tensor grad_grid = at::empty(grid.sizes(), grid.options().memory_format(at::MemoryFormat::Contiguous));
  const int64_t threads = batch * out_h * out_w;
  if (threads > 0) {
    TORCH_CHECK(threads <= UINT32_MAX && input.size(2) * input.size(3) <= UINT32_MAX, "mps_ops: ", grid_op,
                " over more than 2**32 - 1 points or input planes of as many elements");
    grid_sampler_params p{};
    p.batch = batch;
    p.channels = channels;
    p.in_h = input.size(2);
    p.in_w = input.size(3);
    p.out_h = out_h;
    p.out_w = out_w;
    p.padding = static_cast<int>(padding_mode);
    p.align_corners = align_corners ? 1 : 0;
    p.want_input = output_mask[0] ? 1 : 0;
    // Without grad_input the kernel adds nothing: grad_grid fills the slot.
    KernelFunction function(kernels[interpolation_mode].get(Variant::dense, dtype, dtype));
    function.bind_operands(output_mask[0] ? accumulated : grad_grid, grad_grid, grad_output.contiguous(),
                           input.contiguous(), grid.contiguous())
        .bind(p);
    function.dispatch(Dim3{static_cast<uint32_t>(threads), 1, 1});
  }
  at::Tensor grad_input;
  if (output_mask[0]) {
    grad_input = dtype == at::kFloat ? accumulated : accumulated.to(dtype);
  }
  return {grad_input, grad_grid};
}

}  // namespace mps_ops
