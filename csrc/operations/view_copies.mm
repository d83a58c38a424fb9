// Host stubs of ops that copy a view of their input out: channel_shuffle and
// narrow_copy.out. Each builds the view here (no data moves) and runs the
// copy kernel of csrc/kernels/copy.metal over it. Checks and messages are
// the CPU's.
#include "../runtime/elementwise.h"
#include "../runtime/op_checks.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>

namespace mps_ops {

namespace {

// dst[i] = src[i] for two views of one shape, in one dispatch.
void copy_view(const at::Tensor& dst, const at::Tensor& src, bool output_from_caller) {
  static KernelCache kernels("copy");
  auto iter = elementwise_config(output_from_caller).add_output(dst).add_const_input(src).build();
  exec_elementwise(kernels, iter, src.scalar_type());
}

}  // namespace

at::Tensor channel_shuffle(const at::Tensor& self, c10::SymInt groups_) {
  const int64_t groups = groups_.expect_int();
  check_device("channel_shuffle", self);
  check_dtype("channel_shuffle", self);
  TORCH_CHECK(self.dim() > 2, "channel_shuffle expects input with > 2 dims, but got input with sizes ",
              self.sizes());
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive. Value of groups:",
              groups);
  const int64_t channels = self.size(1);
  TORCH_CHECK(channels % groups == 0, "Number of channels must be divisible by groups. Got ", channels,
              " channels and ", groups, " groups.");
  at::Tensor out = at::empty(self.sizes(), self.options().memory_format(self.suggest_memory_format()));
  // out channel i * groups + j takes input channel j * (channels / groups) + i.
  const int64_t per_group = channels / groups;
  copy_view(out.unflatten(1, {per_group, groups}),
            self.unflatten(1, {groups, per_group}).transpose(1, 2), /*output_from_caller=*/false);
  return out;
}

at::Tensor& narrow_copy_out(const at::Tensor& self, int64_t dim, c10::SymInt start_,
                            c10::SymInt length_, at::Tensor& out) {
  int64_t start = start_.expect_int();
  const int64_t length = length_.expect_int();
  check_device("narrow_copy", self);
  check_out_dtype_first(self.scalar_type(), out);
  check_dtype("narrow_copy", self);
  TORCH_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  TORCH_CHECK(self.dtype() == out.dtype(), "Expected self.dtype() == output.dtype() to be true, but got false.");
  // The CPU wraps a negative dim (IndexError past the range) and checks a
  // positive one (RuntimeError).
  if (dim < 0) {
    dim = at::maybe_wrap_dim(dim, self.dim());
  } else {
    TORCH_CHECK(dim < self.dim(), "Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but got false.");
  }
  const int64_t size = self.size(dim);
  TORCH_CHECK_INDEX(start >= -size && start <= size, "start out of range (expected to be in range of [",
                    -size, ", ", size, "], but got ", start, ")");
  start = start < 0 ? start + size : start;
  TORCH_CHECK(start <= size - length && length >= 0, "start (", start, ") + length (", length,
              ") exceeds dimension size (", size, ").");
  const at::Tensor view = self.narrow(dim, start, length);
  check_output("narrow_copy", out, self.scalar_type(), view.sizes(), {&self});
  copy_view(out, view, /*output_from_caller=*/true);
  return out;
}

}  // namespace mps_ops
