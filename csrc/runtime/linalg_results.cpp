#include "linalg_results.h"

#include <ATen/ops/full.h>
#include <c10/util/Exception.h>

namespace mps_ops {

std::vector<int64_t> batch_shape_with(at::IntArrayRef batch, std::initializer_list<int64_t> trailing) {
  std::vector<int64_t> shape(batch.begin(), batch.end());
  shape.insert(shape.end(), trailing);
  return shape;
}

at::IntArrayRef matrix_batch(const at::Tensor& a) {
  return a.sizes().slice(0, a.dim() - 2);
}

at::Tensor pending_kernel_codes(int64_t matrices, const at::Tensor& like) {
  return at::full({matrices}, -1, like.options().dtype(at::kInt));
}

std::vector<int> read_kernel_codes(const at::Tensor& info, const char* name) {
  const at::Tensor codes = info.to(at::kCPU).contiguous();
  // Through a pointer: a tensor index per matrix costs microseconds each.
  const int* code_of = codes.const_data_ptr<int>();
  std::vector<int> result(code_of, code_of + codes.numel());
  for (const int code : result) {
    TORCH_CHECK(code != -1, "mps_ops: ", name, ": the kernel did not complete (the GPU stopped it)");
  }
  return result;
}

void check_linalg_castable(const char* name, c10::ScalarType result, const at::Tensor& out, const char* which) {
  TORCH_CHECK(c10::canCast(result, out.scalar_type()), name, ": Expected ", which, " to be safely castable from ",
              result, " dtype, but got ", which, " with dtype ", out.scalar_type());
}

std::string batch_element(bool batched, int64_t m) {
  return batched ? ": (Batch element " + std::to_string(m) + ")" : "";
}

void check_converged(const std::vector<int>& codes, const char* name, bool batched, const char* repeated_what) {
  for (size_t m = 0; m < codes.size(); ++m) {
    TORCH_CHECK_LINALG(codes[m] == 0, name, batch_element(batched, static_cast<int64_t>(m)),
                       ": The algorithm failed to converge because the input matrix is ill-conditioned or has "
                       "too many repeated ",
                       repeated_what, " (error code: ", codes[m], ").");
  }
}

void check_output_taking_strides(const char* op, at::Tensor& out, const at::Tensor& value,
                                 std::initializer_list<const at::Tensor*> read, OutputDtype rule, Restride restride) {
  const bool take_strides =
      restride == Restride::resized ? out.sizes() != value.sizes() : out.numel() == 0 && value.numel() != 0;
  check_output(op, out, value.scalar_type(), value.sizes(), read, rule);
  if (take_strides && value.dim() >= 2) {
    out.as_strided_(value.sizes(), value.strides());
    check_no_aliasing(out, read);  // restrided, it covers its memory in another order
  }
}

}  // namespace mps_ops
