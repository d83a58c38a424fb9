// Host stubs of _softmax_backward_data and _log_softmax_backward_data
// (functional, out=): `override` ops, whose stock MPS kernels run MPSGraph
// in every backward pass through a softmax. Kernels in
// csrc/kernels/softmax_backward.metal. Checks and messages are the CPU's;
// the CPU's log_softmax backward does not check output's shape (it reads
// outside it), ours does.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/ops/empty.h>

#include <algorithm>

namespace mps_ops {

namespace {

// The CPU's checks, in its order: shapes and dim (its meta function's,
// before an out='s dtype), then dtypes. grad_input has grad's dtype.
void check_softmax_backward_shapes(const char* op, const at::Tensor& grad, const at::Tensor& output,
                                   int64_t dim) {
  check_device(op, grad);
  check_device(op, output);
  TORCH_CHECK(grad.sizes() == output.sizes(), "Expected tensor for argument #1 'grad_output' to have the same size "
              "as tensor for argument #2 'output'; but ", grad.sizes(), " does not equal ", output.sizes(),
              " (while checking arguments for ", op, ")");
  const int64_t dims = std::max<int64_t>(grad.dim(), 1);
  TORCH_CHECK_INDEX(dim >= -dims && dim < dims, "Dimension out of range (expected to be in range of [", -dims,
                    ", ", dims - 1, "], but got ", dim, ")");
}

// The CPU's meta function's grad_input dtype: half for a float grad of a
// half input (the half-to-float softmax's backward), else grad's.
c10::ScalarType grad_input_dtype(const at::Tensor& grad, c10::ScalarType input_dtype) {
  return grad.scalar_type() == at::kFloat && input_dtype == at::kHalf ? at::kHalf : grad.scalar_type();
}

void check_softmax_backward(const char* op, const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                            c10::ScalarType input_dtype) {
  check_softmax_backward_shapes(op, grad, output, dim);
  check_dtype(op, grad);
  check_dtype(op, output);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(grad.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(grad.scalar_type()), "' on ", grad.device());
  TORCH_CHECK(output.scalar_type() == grad.scalar_type(), "expected scalar type ", grad.scalar_type(),
              " but found ", output.scalar_type());
  // As the CPU: input_dtype counts only as float -> half (its meta function
  // asks for a half grad_input, which its float kernel refuses unless there
  // is nothing to compute: so do we; torch's MPS softmax has no
  // half-to-float either); any other is ignored.
  TORCH_CHECK(grad_input_dtype(grad, input_dtype) == grad.scalar_type() || grad.numel() == 0,
              "expected scalar type Float but found Half");
}

// The gradient into grad_input: contiguous, of grad's shape and dtype.
void softmax_backward_into(KernelCache& kernels, const char* op, const at::Tensor& grad, const at::Tensor& output,
                           int64_t dim, at::Tensor& grad_input) {
  if (grad_input.numel() == 0) {
    return;
  }
  // A 0-dim tensor is one row of one element, as the CPU views it.
  const at::Tensor g = grad.dim() == 0 ? grad.reshape({1}) : grad.contiguous();
  const at::Tensor out = output.dim() == 0 ? output.reshape({1}) : output.contiguous();
  at::Tensor target = grad_input.dim() == 0 ? grad_input.view({1}) : grad_input;
  const ReductionPlan plan = plan_reduction(g, {at::maybe_wrap_dim(dim, g.dim())});
  check_row_length(op, plan);
  dispatch_reduction(kernels.get(Variant::reduce, grad.scalar_type(), grad.scalar_type()), {&target}, {&g, &out},
                     plan, {}, SliceMapping::rows);
}

at::Tensor softmax_backward(KernelCache& kernels, const char* op, const at::Tensor& grad, const at::Tensor& output,
                            int64_t dim, c10::ScalarType input_dtype) {
  check_softmax_backward(op, grad, output, dim, input_dtype);
  at::Tensor grad_input = at::empty(grad.sizes(), grad.options().dtype(grad_input_dtype(grad, input_dtype)));
  softmax_backward_into(kernels, op, grad, output, dim, grad_input);
  return grad_input;
}

at::Tensor& softmax_backward_out(KernelCache& kernels, const char* op, const at::Tensor& grad,
                                 const at::Tensor& output, int64_t dim, c10::ScalarType input_dtype,
                                 at::Tensor& grad_input) {
  // A structured kernel: its meta function checks shapes and dim, then the
  // out's dtype, all before its dtype dispatch.
  check_softmax_backward_shapes(op, grad, output, dim);
  check_out_dtype_first(grad_input_dtype(grad, input_dtype), grad_input);
  check_softmax_backward(op, grad, output, dim, input_dtype);
  check_output(op, grad_input, grad_input_dtype(grad, input_dtype), grad.sizes(), {&grad, &output});
  // Written in place where grad_input is contiguous, else into a stand-in.
  const ContiguousOutput target(grad_input);
  at::Tensor written = target.tensor;
  softmax_backward_into(kernels, op, grad, output, dim, written);
  target.copy_back();
  return grad_input;
}

KernelCache& softmax_kernels() {
  static KernelCache kernels("softmax_backward");
  return kernels;
}

KernelCache& log_softmax_kernels() {
  static KernelCache kernels("log_softmax_backward");
  return kernels;
}

}  // namespace

at::Tensor _softmax_backward_data(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim,
                                  at::ScalarType input_dtype) {
  return softmax_backward(softmax_kernels(), "_softmax_backward_data", grad_output, output, dim, input_dtype);
}

at::Tensor& _softmax_backward_data_out(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim,
                                       at::ScalarType input_dtype, at::Tensor& grad_input) {
  return softmax_backward_out(softmax_kernels(), "_softmax_backward_data", grad_output, output, dim, input_dtype,
                              grad_input);
}

at::Tensor _log_softmax_backward_data(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim,
                                      at::ScalarType input_dtype) {
  return softmax_backward(log_softmax_kernels(), "_log_softmax_backward_data", grad_output, output, dim,
                          input_dtype);
}

at::Tensor& _log_softmax_backward_data_out(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim,
                                           at::ScalarType input_dtype, at::Tensor& out) {
  return softmax_backward_out(log_softmax_kernels(), "_log_softmax_backward_data", grad_output, output, dim,
                              input_dtype, out);
}

}  // namespace mps_ops
