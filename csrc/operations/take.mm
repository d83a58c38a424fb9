// Host stubs of torch.take (functional and out=); kernel in
// csrc/kernels/take.metal. Checks and messages are the CPU's.
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/empty.h>

namespace mps_ops {

at::Tensor& take_out(const at::Tensor& self, const at::Tensor& index, at::Tensor& out) {
  static KernelCache kernels("take");
  // No CPU-scalar exception here: every operand is bound as a buffer.
  TORCH_CHECK(self.device() == out.device() && index.device() == out.device(),
              "take(): self, index and out expected to be in the same device, but got self.device = ",
              self.device(), ", index.device = ", index.device(), ", and out.device = ", out.device());
  check_device("take", self);
  check_dtype("take", self);
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong, "take(): Expected a long tensor for index, but got ",
                    index.scalar_type());
  TORCH_CHECK(self.scalar_type() == out.scalar_type(),
              "take(): self and out expected to have the same dtype, but got self.dtype = ",
              self.scalar_type(), " and out.dtype = ", out.scalar_type());
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, index);
  at::assert_no_overlap(out, self);
  at::native::resize_output(out, index.sizes());
  if (index.numel() == 0) {
    return out;
  }
  TORCH_CHECK_INDEX(self.numel() > 0, "take(): tried to take from an empty tensor");
  const int64_t numel = self.numel();
  // One reduction to validate every index up front (on a Mac this waits for
  // the GPU; the kernel then never reads out of bounds).
  const auto [lowest, highest] = at::aminmax(index);
  const int64_t lo = lowest.item<int64_t>(), hi = highest.item<int64_t>();
  const int64_t bad = lo < -numel ? lo : hi;
  TORCH_CHECK_INDEX(lo >= -numel && hi < numel, "out of range: tried to access index ", bad,
                    " on a tensor of ", numel, " elements.");
  TORCH_CHECK(self.dim() <= 16, "take(): more than 16 dimensions");

  const at::Tensor index_c = index.contiguous();
  at::Tensor result = out.is_contiguous() ? out : at::empty(index.sizes(), out.options());
  int64_t sizes[16], strides[16];
  const int64_t ndim = std::max<int64_t>(1, self.dim());
  for (int64_t d = 0; d < ndim; ++d) {
    sizes[d] = self.dim() ? self.size(d) : 1;
    strides[d] = self.dim() ? self.stride(d) * static_cast<int64_t>(self.element_size()) : 0;
  }
  const KernelHandle* handle = kernels.get(Variant::dense, self.scalar_type(), self.scalar_type());
  // One dispatch per 2**31 - 1 elements keeps the thread index in 32 bits.
  for (int64_t start = 0; start < result.numel(); start += INT32_MAX) {
    const int64_t count = std::min<int64_t>(INT32_MAX, result.numel() - start);
    KernelFunction kernel(handle);
    kernel.set_buffer(0, result, static_cast<char*>(result.data_ptr()) + start * result.element_size(),
                      count * result.element_size());
    kernel.set_buffer(1, index_c, index_c.const_data_ptr<int64_t>() + start, count * sizeof(int64_t));
    kernel.set_tensor(2, self);
    kernel.set_bytes(3, sizes, sizeof(int64_t) * ndim);
    kernel.set_bytes(4, strides, sizeof(int64_t) * ndim);
    kernel.set_value(5, static_cast<uint32_t>(ndim));
    kernel.set_value(6, numel);
    kernel.set_operand_count(3);  // out, index, self
    kernel.dispatch(Dim3{static_cast<uint32_t>(count), 1, 1});
  }
  if (!result.is_same(out)) {
    out.copy_(result);
  }
  return out;
}

at::Tensor take(const at::Tensor& self, const at::Tensor& index) {
  at::Tensor out = at::empty({0}, self.options());
  return take_out(self, index, out);
}

}  // namespace mps_ops
