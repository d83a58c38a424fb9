// Host stubs of grid_sampler_2d_backward and grid_sampler_3d_backward: `fill`
// ops (torch 2.9 to 2.12 have no MPS kernel for them, so grid_sample's
// gradient raised on a Mac). Kernels in csrc/kernels/grid_sampler.metal.
// Checks and messages are the CPU's (GridSampler.cpp's
// check_grid_sampler_common, _2d and _3d), in its order; grad_input comes
// out contiguous and grad_grid contiguous of the grid's shape, as the CPU's.
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include "../kernels/grid_sampler_params.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <array>
#include <tuple>
#include <vector>

namespace mps_ops {

namespace {

// The 2-D or the 3-D op: its name, its CPU kernel's (in the dtype
// dispatch's message), its spatial dimensions and its kernels, one per
// interpolation mode (grid_sampler.metal says why; 3-D has no bicubic).
struct GridOp {
  const char* name;
  const char* cpu_name;
  int spatial;
  KernelCache* kernels;
};

// The CPU's shape checks (check_grid_sampler_common, then _2d or _3d; its
// backward leaves the dtypes to its dtype dispatch and its typed reads), in
// its order.
void check_grid_sampler_shapes(const GridOp& op, const at::Tensor& input, const at::Tensor& grid,
                               int64_t interpolation_mode) {
  TORCH_CHECK_INDEX(input.dim() > 0 && grid.dim() > 0, "Dimension specified as 0 but tensor has no dimensions (",
                    op.name, ")");
  TORCH_CHECK(input.size(0) == grid.size(0),
              "grid_sampler(): expected grid and input to have same batch size, but got input with sizes ",
              input.sizes(), " and grid with sizes ", grid.sizes());
  TORCH_CHECK(grid.size(-1) == input.dim() - 2, "grid_sampler(): expected grid to have size ", input.dim() - 2,
              " in last dimension, but got grid with sizes ", grid.sizes());
  for (int64_t i = 2; i < input.dim(); ++i) {
    TORCH_CHECK(input.size(i) > 0, "grid_sampler(): expected input to have non-empty spatial dimensions, but input has ",
                "sizes ", input.sizes(), " with dimension ", i, " being empty");
  }
  TORCH_CHECK(input.dim() == op.spatial + 2 && grid.dim() == op.spatial + 2, "grid_sampler(): expected ",
              op.spatial + 2, "D input and grid with same number of dimensions, but got input with sizes ",
              input.sizes(), " and grid with sizes ", grid.sizes());
  TORCH_CHECK(op.spatial == 2 || interpolation_mode != grid_bicubic,
              "grid_sampler(): bicubic interpolation only supports 4D input");
}

// The sizes' fields of either params struct: input (N, C, *spatial), grid
// (N, *out, spatial).
void set_sizes(grid_sampler_params& p, const at::Tensor& input, const at::Tensor& grid) {
  p.in_h = input.size(2);
  p.in_w = input.size(3);
  p.out_h = grid.size(1);
  p.out_w = grid.size(2);
}

void set_sizes(grid_sampler_3d_params& p, const at::Tensor& input, const at::Tensor& grid) {
  p.in_d = input.size(2);
  p.in_h = input.size(3);
  p.in_w = input.size(4);
  p.out_d = grid.size(1);
  p.out_h = grid.size(2);
  p.out_w = grid.size(3);
}

template <typename Params>
std::tuple<at::Tensor, at::Tensor> grid_sampler_backward(const GridOp& op, const at::Tensor& grad_output,
                                                         const at::Tensor& input, const at::Tensor& grid,
                                                         int64_t interpolation_mode, int64_t padding_mode,
                                                         bool align_corners, std::array<bool, 2> output_mask) {
  check_devices(op.name, {&grad_output, &input, &grid});
  // The CPU's order: its shape checks, its dtype dispatch (the input's),
  // then its reads of the grid and grad_output as the input's dtype; what it
  // leaves unchecked (modes outside its enums, grad_output's size) raises.
  check_grid_sampler_shapes(op, input, grid, interpolation_mode);
  const c10::ScalarType dtype = input.scalar_type();
  check_dtype(op.name, input);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(dtype), "\"", op.cpu_name, "\" not implemented for '",
                              c10::toString(dtype), "' on ", input.device());
  if (op.spatial == 3) {
    // The 3-D CPU kernel reads grad_output's five strides before it reads
    // any data as the input's dtype: one of fewer dimensions raises its
    // IndexError.
    for (int64_t d = 0; d < 5; ++d) {
      (void)grad_output.stride(d);
    }
  }
  for (const at::Tensor* t : {&grid, &grad_output}) {
    TORCH_CHECK(t->scalar_type() == dtype, "expected scalar type ", dtype, " but found ", t->scalar_type(), " (",
                op.name, " on ", input.device(), ")");
  }
  const int64_t last_mode = op.spatial == 2 ? grid_bicubic : grid_nearest;
  TORCH_CHECK(interpolation_mode >= grid_bilinear && interpolation_mode <= last_mode, op.name,
              ": interpolation_mode must be 0 (bilinear), 1 (nearest)", op.spatial == 2 ? " or 2 (bicubic)" : "",
              ", got ", interpolation_mode);
  TORCH_CHECK(padding_mode >= grid_pad_zeros && padding_mode <= grid_pad_reflection, op.name,
              ": padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got ", padding_mode);
  // What the CPU reads unchecked (past the end of a smaller one): grad_output
  // (N, C, *the grid's points).
  std::vector<int64_t> grad_output_size{input.size(0), input.size(1)};
  int64_t points = 1;
  for (int64_t i = 1; i <= op.spatial; ++i) {
    grad_output_size.push_back(grid.size(i));
    points *= grid.size(i);
  }
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(grad_output_size), op.name, ": grad_output of size ",
              grad_output.sizes(), " for ", input.size(0), " x ", input.size(1), " channels sampled at ",
              grid.sizes().slice(1, op.spatial), " points");
  const auto float_options = input.options().dtype(at::kFloat).memory_format(at::MemoryFormat::Contiguous);
  // grad_input accumulates in float; for a float input that is the result.
  at::Tensor accumulated = output_mask[0] ? at::zeros(input.sizes(), float_options) : at::Tensor();
  at::Tensor grad_grid = at::empty(grid.sizes(), grid.options().memory_format(at::MemoryFormat::Contiguous));
  const int64_t threads = input.size(0) * points;
  if (threads > 0) {
    int64_t input_plane = 1;
    for (int64_t i = 2; i < input.dim(); ++i) {
      input_plane *= input.size(i);
    }
    TORCH_CHECK(threads <= UINT32_MAX && input_plane <= UINT32_MAX, "mps_ops: ", op.name,
                " over more than 2**32 - 1 points or input planes of as many elements");
    Params p{};
    p.batch = input.size(0);
    p.channels = input.size(1);
    set_sizes(p, input, grid);
    p.padding = static_cast<int>(padding_mode);
    p.align_corners = align_corners ? 1 : 0;
    p.want_input = output_mask[0] ? 1 : 0;
    // Without grad_input the kernel adds nothing: grad_grid fills the slot.
    KernelFunction function(op.kernels[interpolation_mode].get(Variant::dense, dtype, dtype));
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

}  // namespace

std::tuple<at::Tensor, at::Tensor> grid_sampler_2d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                                            const at::Tensor& grid, int64_t interpolation_mode,
                                                            int64_t padding_mode, bool align_corners,
                                                            std::array<bool, 2> output_mask) {
  static KernelCache kernels[] = {KernelCache("grid_sampler_2d_backward_bilinear"),
                                  KernelCache("grid_sampler_2d_backward_nearest"),
                                  KernelCache("grid_sampler_2d_backward_bicubic")};
  return grid_sampler_backward<grid_sampler_params>(
      GridOp{"grid_sampler_2d_backward", "grid_sampler_2d_backward_cpu_kernel_impl", 2, kernels}, grad_output, input,
      grid, interpolation_mode, padding_mode, align_corners, output_mask);
}

std::tuple<at::Tensor, at::Tensor> grid_sampler_3d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                                            const at::Tensor& grid, int64_t interpolation_mode,
                                                            int64_t padding_mode, bool align_corners,
                                                            std::array<bool, 2> output_mask) {
  static KernelCache kernels[] = {KernelCache("grid_sampler_3d_backward_bilinear"),
                                  KernelCache("grid_sampler_3d_backward_nearest")};
  return grid_sampler_backward<grid_sampler_3d_params>(
      GridOp{"grid_sampler_3d_backward", "grid_sampler_3d_backward_cpu", 3, kernels}, grad_output, input, grid,
      interpolation_mode, padding_mode, align_corners, output_mask);
}

}  // namespace mps_ops
