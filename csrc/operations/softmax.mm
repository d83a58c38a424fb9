// Host stubs of _softmax and _log_softmax (functional, out=): `override`
// ops, whose stock MPS kernels run MPSGraph up to torch 2.14 (2.15 ships
// native ones, so the registry leaves it alone). Kernels in
// csrc/kernels/softmax.metal. Checks and messages are the CPU's.
#include "../runtime/contiguous_output.h"
#include "../runtime/element_pairs.h"
#include "../runtime/host_name.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/ops/empty.h>

namespace mps_ops {

namespace {

// An op's kernels: one element per load, or two (half and bfloat rows
// that allow it).
struct SoftmaxKernels {
  KernelCache& single;
  KernelCache& pairs;
};

// The CPU's checks, in its order: dim (its meta function), then the half to
// float conversion (which only CUDA does: torch's softmax asks for it on
// CUDA alone), then the dtype dispatch. The output has the input's dtype.
void check_softmax(const char* op, const char* kernel_name, const at::Tensor& self, int64_t dim,
                   bool half_to_float) {
  check_device(op, self);
  at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(!half_to_float, "softmax with half to float conversion is not supported on ", self.device().type());
  check_dtype(op, self);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"", kernel_name,
                              "\" not implemented for '", c10::toString(self.scalar_type()), "' on ",
                              self.device());
}

// The result into out: contiguous, of self's shape and dtype.
void softmax_into(SoftmaxKernels& kernels, const char* op, const at::Tensor& self, int64_t dim, at::Tensor& out) {
  if (out.numel() == 0) {
    return;
  }
  // A 0-dim tensor is one row of one element, as the CPU views it.
  const at::Tensor in = self.dim() == 0 ? self.reshape({1}) : self.contiguous();
  at::Tensor target = out.dim() == 0 ? out.view({1}) : out;
  const ReductionPlan plan = plan_reduction(in, {at::maybe_wrap_dim(dim, in.dim())});
  check_row_length(op, plan);
  KernelCache& cache = rows_in_pairs(plan, {&in, &target}) ? kernels.pairs : kernels.single;
  dispatch_reduction(cache.get(Variant::reduce, self.scalar_type(), self.scalar_type()), {&target}, {&in}, plan, {},
                     SliceMapping::held_rows);
}

at::Tensor softmax(SoftmaxKernels& kernels, const char* op, const char* kernel_name, const at::Tensor& self,
                   int64_t dim, bool half_to_float) {
  check_softmax(op, kernel_name, self, dim, half_to_float);
  at::Tensor out = at::empty(self.sizes(), self.options());
  softmax_into(kernels, op, self, dim, out);
  return out;
}

at::Tensor& softmax_out(SoftmaxKernels& kernels, const char* op, const char* kernel_name, const at::Tensor& self,
                        int64_t dim, bool half_to_float, at::Tensor& out) {
  // A structured kernel: its meta function wraps the dim, then checks the
  // out's dtype, both before its dtype dispatch.
  at::maybe_wrap_dim(dim, self.dim());
  check_out_dtype_first(self.scalar_type(), out);
  check_softmax(op, kernel_name, self, dim, half_to_float);
  check_output(op, out, self.scalar_type(), self.sizes(), {&self});
  // Written in place where out is contiguous, else into a stand-in.
  const ContiguousOutput target(out);
  at::Tensor written = target.tensor;
  softmax_into(kernels, op, self, dim, written);
  target.copy_back();
  return out;
}

SoftmaxKernels& softmax_forward_kernels() {
  static KernelCache single("softmax");
  static KernelCache pairs("softmax_pairs");
  static SoftmaxKernels kernels{single, pairs};
  return kernels;
}

SoftmaxKernels& log_softmax_forward_kernels() {
  static KernelCache single("log_softmax");
  static KernelCache pairs("log_softmax_pairs");
  static SoftmaxKernels kernels{single, pairs};
  return kernels;
}

}  // namespace

at::Tensor _softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return softmax(softmax_forward_kernels(), "_softmax", "softmax_kernel_impl", self, dim, half_to_float);
}

at::Tensor& _softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out) {
  return softmax_out(softmax_forward_kernels(), "_softmax", "softmax_kernel_impl", self, dim, half_to_float, out);
}

at::Tensor _log_softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return softmax(log_softmax_forward_kernels(), "_log_softmax", "log_softmax_kernel_impl", self, dim, half_to_float);
}

at::Tensor& _log_softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out) {
  return softmax_out(log_softmax_forward_kernels(), "_log_softmax", "log_softmax_kernel_impl", self, dim, half_to_float,
                     out);
}

}  // namespace mps_ops
