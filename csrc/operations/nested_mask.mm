// Host stub of _nested_tensor_from_mask_left_aligned, which
// nn.TransformerEncoder calls on a padding mask in eval mode before it looks
// at the device (no MPS kernel in any torch release): kernel in
// csrc/kernels/nested_mask.metal. Checks and messages are the CPU's.
#include "../runtime/host_name.h"
#include "../runtime/kernel_flag.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include "../kernels/nested_mask_params.h"

namespace mps_ops {

bool _nested_tensor_from_mask_left_aligned(const at::Tensor& t, const at::Tensor& mask) {
  static KernelCache kernels("mask_left_aligned");
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Expected mask to be of ScalarType Bool, but got ",
              mask.scalar_type(), " instead.");
  TORCH_CHECK(mask.dim() == 2, "Padding mask should be 2D");
  TORCH_CHECK(t.dim() == 3, "Input should be a 3D tensor, N * L * D");
  const int64_t rows = t.size(0), columns = t.size(1);
  TORCH_CHECK(rows == mask.size(0) && columns == mask.size(1), "Mask size should match input size");
  // The CPU reads each row's count of trues at column L - 1 (cumsum, then
  // select): a mask without columns raises select's IndexError.
  TORCH_CHECK_INDEX(columns > 0, "select(): index -1 out of range for tensor of size [", rows,
                    ", 0] at dimension 1");
  check_device("_nested_tensor_from_mask_left_aligned", mask);
  if (rows == 0 || columns == 1) {
    return true;  // no neighbouring pair to check
  }
  TORCH_CHECK(rows <= UINT32_MAX && columns - 1 <= UINT32_MAX,
              "mps_ops: _nested_tensor_from_mask_left_aligned of a mask with 2**32 rows or columns or more");
  const KernelFlag rise;
  mask_rows_params params{mask.stride(0), mask.stride(1)};
  KernelFunction kernel(kernels.get(Variant::dense, at::kBool, at::kBool));
  kernel.bind_operands(rise, mask).bind(params);
  kernel.dispatch(Dim3{static_cast<uint32_t>(columns - 1), static_cast<uint32_t>(rows), 1});
  return !rise.raised();
}

}  // namespace mps_ops
