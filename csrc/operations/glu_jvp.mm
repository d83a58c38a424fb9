// Host stubs of glu_jvp and glu_backward_jvp (forward-mode AD through
// nn.functional.glu); kernels in csrc/kernels/glu_jvp.metal. The halves of
// x, dx and grad_x are views: no copies.
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include "../kernels/include/mps_ops/params.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>

namespace mps_ops {

namespace {

void check_glu_operand(const char* op, const at::Tensor& t, const at::Tensor& like) {
  check_device(op, t);
  check_dtype(op, t);
  TORCH_CHECK(t.scalar_type() == like.scalar_type(), op, ": expected all tensors of dtype ",
              like.scalar_type(), " but got ", t.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(t.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(t.scalar_type()), "' on ", t.device());
}

// One thread per element of `operands[0]`'s shape, each operand through its strides.
void dispatch_glu(KernelCache& kernels, std::initializer_list<const at::Tensor*> operands) {
  const at::Tensor& shape_of = *operands.begin()[0];
  if (shape_of.numel() == 0) {
    return;
  }
  TORCH_CHECK(shape_of.dim() <= glu_max_dims, "mps_ops: ", kernels.op(), " takes at most ", glu_max_dims,
              " dims");
  TORCH_CHECK(shape_of.numel() <= UINT32_MAX, "mps_ops: ", kernels.op(), " over more than 2**32 - 1 elements");
  glu_geometry g{};
  g.ndim = static_cast<int>(shape_of.dim());
  for (int d = 0; d < g.ndim; ++d) {
    g.sizes[d] = shape_of.size(d);
  }
  KernelFunction function(kernels.get(Variant::strided, shape_of.scalar_type(), shape_of.scalar_type()));
  int slot = 0;
  for (const at::Tensor* t : operands) {
    for (int d = 0; d < g.ndim; ++d) {
      g.strides[slot][d] = t->stride(d);
    }
    function.set_tensor(slot++, *t);
  }
  function.set_operand_count(slot);
  function.set_bytes(slot, &g, sizeof(g));
  function.dispatch(Dim3{static_cast<uint32_t>(shape_of.numel()), 1, 1});
}

}  // namespace

at::Tensor glu_jvp(const at::Tensor& glu, const at::Tensor& x, const at::Tensor& dx, int64_t dim) {
  static KernelCache kernels("glu_jvp");
  for (const at::Tensor* t : {&glu, &x, &dx}) {
    check_glu_operand("glu_jvp", *t, x);
  }
  dim = at::maybe_wrap_dim(dim, x.dim());
  const int64_t half = glu.size(dim);
  TORCH_CHECK(x.size(dim) == 2 * half && dx.sizes() == x.sizes(),
              "glu_jvp: expected x and dx of twice glu's size along dim ", dim);
  at::Tensor out = at::empty_like(glu, at::MemoryFormat::Contiguous);
  const at::Tensor b = x.narrow(dim, half, half), da = dx.narrow(dim, 0, half), db = dx.narrow(dim, half, half);
  dispatch_glu(kernels, {&out, &glu, &b, &da, &db});
  return out;
}

at::Tensor glu_backward_jvp(const at::Tensor& grad_x, const at::Tensor& grad_glu, const at::Tensor& x,
                            const at::Tensor& dgrad_glu, const at::Tensor& dx, int64_t dim) {
  static KernelCache kernels("glu_backward_jvp");
  for (const at::Tensor* t : {&grad_x, &grad_glu, &x, &dgrad_glu, &dx}) {
    check_glu_operand("glu_backward_jvp", *t, x);
  }
  dim = at::maybe_wrap_dim(dim, x.dim());
  const int64_t half = grad_glu.size(dim);
  TORCH_CHECK(x.size(dim) == 2 * half && dx.sizes() == x.sizes() && grad_x.sizes() == x.sizes() &&
                  dgrad_glu.sizes() == grad_glu.sizes(),
              "glu_backward_jvp: expected x, dx and grad_x of twice grad_glu's size along dim ", dim);
  at::Tensor out = at::empty(x.sizes(), x.options());
  const at::Tensor out_a = out.narrow(dim, 0, half), out_b = out.narrow(dim, half, half);
  const at::Tensor a = x.narrow(dim, 0, half), b = x.narrow(dim, half, half);
  const at::Tensor da = dx.narrow(dim, 0, half), db = dx.narrow(dim, half, half);
  dispatch_glu(kernels, {&out_a, &out_b, &grad_glu, &a, &b, &dgrad_glu, &da, &db});
  return out;
}

}  // namespace mps_ops
