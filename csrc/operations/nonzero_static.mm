// Host stubs of nonzero_static (+ out=): `fill` ops (torch 2.9 to 2.11 have
// no MPS kernel for them, so compiled and exported programs that keep
// nonzero's shape static raised on a Mac). Kernels in
// csrc/kernels/nonzero_static.metal: the count, the blocks' offsets, the
// coordinates and the fill all run on the GPU, and nothing is read back, as
// the op's static shape intends. The CPU's checks and messages, in its order.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/kernel_inputs.h"
#include "../runtime/op_checks.h"

#include "../kernels/nonzero_static_params.h"

#include <ATen/ops/empty.h>

#include <algorithm>

namespace mps_ops {

namespace {

constexpr const char* nonzero_static_op = "nonzero_static";

// The largest power-of-two threadgroup, 32 to `cap` threads, that every
// kernel in `kernels` can run.
uint32_t common_group(uint32_t cap, std::initializer_list<const KernelHandle*> kernels) {
  uint32_t threads = cap;
  for (const KernelHandle* kernel : kernels) {
    threads = std::min(threads, power_of_two_group(cap, cap, kernel));
  }
  return threads;
}

at::Tensor& nonzero_static_into(const at::Tensor& self, int64_t size, int64_t fill_value, at::Tensor& out) {
  static KernelCache count_kernels("nonzero_static_count");
  static KernelCache write_kernels("nonzero_static_write");
  static KernelCache scan_kernels("nonzero_static_scan");
  static KernelCache fill_kernels("nonzero_static_fill");
  check_device(nonzero_static_op, self);
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer");
  TORCH_CHECK(out.scalar_type() == at::kLong,
              "nonzero_static: Expected out tensor to have scalar type Long but got scalar type", out.scalar_type());
  const int64_t ndim = self.dim();
  check_output(nonzero_static_op, out, at::kLong, {size, ndim}, {&self});
  // No rows or no coordinates: the CPU returns before its dtype dispatch.
  if (out.numel() == 0) {
    return out;
  }
  // Complex values are nonzero where either part is (a conjugate's alike).
  const at::Tensor values = real_parts(self);
  check_dtype(nonzero_static_op, values);
  const c10::ScalarType dtype = values.scalar_type();
  // The CPU's dtype dispatch lacks the wide unsigned types.
  TORCH_CHECK_NOT_IMPLEMENTED(!is_wide_unsigned(dtype),
                              "\"nonzero_count_cpu\" not implemented for '", self.scalar_type(), "' on ",
                              self.device());
  TORCH_CHECK(ndim <= nonzero_static_max_dims, "mps_ops: nonzero_static of a tensor of more than ",
              static_cast<int>(nonzero_static_max_dims), " dims");
  TORCH_CHECK(out.numel() <= UINT32_MAX, "mps_ops: nonzero_static of more than 2**32 - 1 output elements");
  nonzero_static_params p{};
  p.numel = static_cast<unsigned long>(self.numel());
  p.rows = static_cast<unsigned long>(size);
  p.fill_value = fill_value;
  p.ndim = static_cast<int>(ndim);
  p.parts = self.is_complex() ? 2 : 1;
  // (An empty input runs no kernel that divides, and may have a dim of
  // 2**32 or more.)
  p.narrow = self.numel() > 0 && self.numel() <= UINT32_MAX ? 1 : 0;
  for (int64_t d = 0; d < ndim; ++d) {
    p.sizes[d] = self.size(d);
    if (p.narrow != 0) {
      p.by_size[d] = make_fast_divisor(static_cast<unsigned>(std::max<int64_t>(self.size(d), 1)));
    }
  }
  const KernelHandle* count_kernel = count_kernels.get(Variant::dense, dtype, dtype);
  const KernelHandle* write_kernel = write_kernels.get(Variant::dense, dtype, dtype);
  const uint32_t width = common_group(256, {count_kernel, write_kernel});
  const int64_t block = static_cast<int64_t>(width) * nonzero_static_per_thread;
  p.blocks = static_cast<unsigned long>((self.numel() + block - 1) / block);
  TORCH_CHECK(static_cast<int64_t>(p.blocks) * width <= UINT32_MAX, "mps_ops: nonzero_static of more than ",
              static_cast<int64_t>(UINT32_MAX / width) * block, " elements");
  const ContiguousOutput target(out);
  // The blocks' offsets, then the total: the scan writes them all; an empty
  // input's total is 0.
  at::Tensor offsets = at::empty({static_cast<int64_t>(p.blocks) + 1}, self.options().dtype(at::kLong));
  if (p.blocks == 0) {
    offsets.zero_();
  } else {
    const at::Tensor input = values.contiguous();
    at::Tensor counts = at::empty({static_cast<int64_t>(p.blocks)}, self.options().dtype(at::kInt));
    const Dim3 groups{static_cast<uint32_t>(p.blocks) * width, 1, 1};
    KernelFunction count(count_kernel);
    count.bind_operands(counts, input).bind(p);
    count.dispatch(groups, Dim3{width, 1, 1});
    const KernelHandle* scan_kernel = scan_kernels.get(Variant::dense, at::kLong, at::kLong);
    const int64_t scan_threads = (static_cast<int64_t>(p.blocks) + nonzero_static_scan_per_thread - 1) /
                                 nonzero_static_scan_per_thread;
    const uint32_t scan_width = power_of_two_group(scan_threads, 1024, scan_kernel);
    KernelFunction scan(scan_kernel);
    scan.bind_operands(offsets, counts).bind(p);
    scan.dispatch(Dim3{scan_width, 1, 1}, Dim3{scan_width, 1, 1});
    KernelFunction write(write_kernel);
    write.bind_operands(target.tensor, input, offsets).bind(p);
    write.dispatch(groups, Dim3{width, 1, 1});
  }
  KernelFunction fill(fill_kernels.get(Variant::dense, at::kLong, at::kLong));
  fill.bind_operands(target.tensor, offsets).bind(p);
  fill.dispatch(Dim3{static_cast<uint32_t>((size + nonzero_static_fill_rows - 1) / nonzero_static_fill_rows), 1, 1});
  target.copy_back();
  return out;
}

}  // namespace

at::Tensor nonzero_static(const at::Tensor& self, c10::SymInt size, int64_t fill_value) {
  at::Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  return nonzero_static_into(self, size.guard_int(__FILE__, __LINE__), fill_value, out);
}

at::Tensor& nonzero_static_out(const at::Tensor& self, c10::SymInt size, int64_t fill_value, at::Tensor& out) {
  return nonzero_static_into(self, size.guard_int(__FILE__, __LINE__), fill_value, out);
}

}  // namespace mps_ops
