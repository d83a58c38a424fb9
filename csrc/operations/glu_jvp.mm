// Host stubs of glu_jvp and glu_backward_jvp (forward-mode AD through
// nn.functional.glu); kernels in csrc/kernels/glu_jvp.metal. The halves of
// x, dx and grad_x are views, broadcast against each other as the CPU's
// TensorIterator and tensor ops broadcast them: no copies, except where the
// views need more dims than a kernel's stride table holds.
#include "../runtime/element_pairs.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include "../kernels/glu_jvp_params.h"

#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/result_type.h>

#include <algorithm>

namespace mps_ops {

namespace {

// The CPU's dtype checks, in its order: one dtype for all (RuntimeError),
// then its floating-point dispatch (NotImplementedError); half and bfloat16
// run here too (the registry's `differs`).
void check_glu_dtypes(const char* op, std::initializer_list<const at::Tensor*> operands) {
  const at::Tensor& first = **operands.begin();
  for (const at::Tensor* t : operands) {
    check_device(op, *t);
    TORCH_CHECK(t->scalar_type() == first.scalar_type(), "Found dtype ", t->scalar_type(), " but expected ",
                first.scalar_type());
  }
  check_dtype(op, first);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(first.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(first.scalar_type()), "' on ", first.device());
}

// The broadcast shape of the operands (the CPU's error where there is none).
std::vector<int64_t> broadcast_shape(std::initializer_list<const at::Tensor*> operands) {
  std::vector<int64_t> shape;
  for (const at::Tensor* t : operands) {
    shape = at::infer_size(shape, t->sizes());
  }
  return shape;
}

// Threads over the outputs' shape (all operands expanded to
// it), each operand through its own strides. Size-1 dims are dropped; a
// shape that still needs more than glu_max_dims dims runs on contiguous
// copies (one dim), the outputs copied back.
void dispatch_glu(const KernelHandle* kernel, const char* op, int outputs, std::vector<at::Tensor> operands) {
  const at::Tensor& shape_of = operands[0];
  if (shape_of.numel() == 0) {
    return;
  }
  TORCH_CHECK(shape_of.numel() <= UINT32_MAX, "mps_ops: ", op, " over more than 2**32 - 1 elements");
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < shape_of.dim(); ++d) {
    if (shape_of.size(d) != 1) {
      kept.push_back(d);
    }
  }
  std::vector<at::Tensor> targets(operands.begin(), operands.begin() + outputs);
  if (kept.size() > glu_max_dims) {
    for (size_t i = 0; i < operands.size(); ++i) {
      operands[i] = (i < static_cast<size_t>(outputs) ? at::empty(shape_of.sizes(), shape_of.options())
                                                      : operands[i].contiguous());
    }
    kept.assign(1, 0);
    for (at::Tensor& t : operands) {
      t = t.view({-1});
    }
  }
  glu_geometry g{};
  g.ndim = static_cast<int>(std::max<size_t>(kept.size(), 1));
  for (int d = 0; d < g.ndim; ++d) {
    g.sizes[d] = kept.empty() ? 1 : operands[0].size(kept[d]);
  }
  KernelFunction function(kernel);
  for (size_t i = 0; i < operands.size(); ++i) {
    for (int d = 0; d < g.ndim; ++d) {
      g.strides[i][d] = kept.empty() ? 0 : operands[i].stride(kept[d]);
    }
  }
  // Narrow: each operand's last element below 2**31 elements from its first
  // (strides are never negative), so the kernel's offsets fit 32 bits.
  int64_t farthest = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    int64_t last = 0;
    for (int d = 0; d < g.ndim; ++d) {
      last += (g.sizes[d] - 1) * g.strides[i][d];
    }
    farthest = std::max(farthest, last);
  }
  g.narrow = farthest < (int64_t{1} << 31) ? 1 : 0;
  function.bind_operand_list(operands).bind(g);
  // x: the innermost dim, up to glu_elements_per_thread of it per thread; y:
  // the rest (the strided element-wise kernels' grid).
  // In 64 bits: an inner dim within per_thread of 2**32 would round up past 32.
  const int64_t inner = g.sizes[g.ndim - 1];
  const int64_t per_thread = glu_elements_per_thread;
  function.dispatch(Dim3{static_cast<uint32_t>((inner + per_thread - 1) / per_thread),
                         static_cast<uint32_t>(shape_of.numel() / inner), 1});
  for (int i = 0; i < outputs; ++i) {
    if (!operands[i].is_same(targets[i]) && operands[i].data_ptr() != targets[i].data_ptr()) {
      targets[i].copy_(operands[i].view(targets[i].sizes()));
    }
  }
}

// The memory format of the CPU's glu_backward_jvp result: its composite's
// at::cat is channels-last where both halves it joins suggest it, else
// contiguous, and each half's layout follows the chain of element-wise ops
// that made it (each one's TensorIterator in turn), so the chain runs here on
// meta tensors, which allocate nothing. Contiguous operands (their halves
// then in row-major order) give a contiguous result without it.
at::MemoryFormat backward_jvp_format(const at::Tensor& grad_x, const at::Tensor& x, const at::Tensor& dgrad_glu,
                                     const at::Tensor& dx, int64_t dim, int64_t half) {
  if (grad_x.is_contiguous() && x.is_contiguous() && dgrad_glu.is_contiguous() && dx.is_contiguous()) {
    return at::MemoryFormat::Contiguous;
  }
  // In float whatever the dtype: torch's meta kernels for half and bfloat16
  // element-wise ops (Python ones) stride size-1 dims otherwise than the
  // CPU's iterator does, which swayed suggest_memory_format.
  auto meta = [&](const at::Tensor& t) {
    return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta).dtype(at::kFloat));
  };
  const at::Tensor m_x = meta(x), m_dx = meta(dx);
  const at::Tensor a = m_x.narrow(dim, 0, half), da = m_dx.narrow(dim, 0, half), db = m_dx.narrow(dim, half, half);
  const at::Tensor grad_x_a = meta(grad_x).narrow(dim, 0, half);
  const at::Tensor sig_b = m_x.narrow(dim, half, half).sigmoid();
  const at::Tensor glu = a.mul(sig_b);
  const at::Tensor db_neg_sig_b = db.sub(db.mul(sig_b));
  const at::Tensor part_a = meta(dgrad_glu).mul(sig_b).add(grad_x_a.mul(db_neg_sig_b));
  const at::Tensor part_b =
      part_a.mul(a.sub(glu)).add(grad_x_a.mul(da.sub(da.mul(sig_b)).sub(glu.mul(db_neg_sig_b))));
  const at::MemoryFormat format = part_a.suggest_memory_format();
  return format == part_b.suggest_memory_format() ? format : at::MemoryFormat::Contiguous;
}

}  // namespace

at::Tensor glu_jvp(const at::Tensor& glu, const at::Tensor& x, const at::Tensor& dx, int64_t dim) {
  static KernelCache kernels("glu_jvp");
  static KernelCache pairs_kernels("glu_jvp_pairs");
  // The CPU's order: the views first (their IndexError / RuntimeError),
  // then the iterator's shape and dtype checks.
  dim = at::maybe_wrap_dim(dim, x.dim());
  const int64_t half = glu.size(dim);
  const at::Tensor b = x.narrow(dim, half, half), da = dx.narrow(dim, 0, half), db = dx.narrow(dim, half, half);
  // The CPU's iterator resizes its output to the broadcast shape.
  const auto shape = broadcast_shape({&glu, &b, &da, &db});
  check_glu_dtypes("glu_jvp", {&glu, &b, &da, &db});
  // The CPU's output is empty_like(glu), which its iterator restrides to its
  // own layout only where glu is broadcast.
  at::Tensor out = glu.sizes().equals(shape)
                       ? at::empty_like(glu)
                       : at::empty_strided(shape, iterator_output_strides({&glu, &b, &da, &db}), glu.options());
  const std::vector<at::Tensor> operands{out, glu.expand(shape), b.expand(shape), da.expand(shape),
                                         db.expand(shape)};
  const c10::ScalarType dtype = glu.scalar_type();
  // Half and bfloat16 rows contiguous in every operand: two elements per
  // load and store (element_pairs.h says why).
  std::vector<at::Tensor> words = out.numel() > 0 && (dtype == at::kHalf || dtype == at::kBFloat16)
                                      ? operands_in_words(operands)
                                      : std::vector<at::Tensor>{};
  if (!words.empty()) {
    dispatch_glu(pairs_kernels.get(Variant::dense, dtype, dtype), "glu_jvp", 1, std::move(words));
  } else {
    dispatch_glu(kernels.get(Variant::strided, dtype, dtype), "glu_jvp", 1, operands);
  }
  return out;
}

// glu_backward_jvp is a composite of tensor ops on the CPU: its operands
// promote as those ops promote them (integers to the default float), and it
// runs in half and bfloat16 (per op there; here in float, rounded once).
at::Tensor glu_backward_jvp(const at::Tensor& grad_x, const at::Tensor& grad_glu, const at::Tensor& x,
                            const at::Tensor& dgrad_glu, const at::Tensor& dx, int64_t dim) {
  static KernelCache kernels("glu_backward_jvp");
  const char* op = "glu_backward_jvp";
  // grad_glu gives only the halves' size: the CPU reads grad_x's first half
  // (grad_glu * sigmoid(b), as the backward pass stored it) instead.
  dim = at::maybe_wrap_dim(dim, x.dim());
  const int64_t half = grad_glu.size(dim);
  const at::Tensor a = x.narrow(dim, 0, half), b = x.narrow(dim, half, half);
  const at::Tensor da = dx.narrow(dim, 0, half), db = dx.narrow(dim, half, half);
  const at::Tensor grad_x_a = grad_x.narrow(dim, 0, half);
  (void)grad_x.narrow(dim, half, half);  // the CPU's check that grad_x has both halves
  const auto shape = broadcast_shape({&a, &b, &da, &db, &grad_x_a, &dgrad_glu});
  // sigmoid(b) is the first op: x promotes to a float type before the rest.
  // Every later op meets an intermediate of x's dims, so a 0-dim operand
  // (dgrad_glu may be one) promotes it only into another category, as
  // at::result_type rules (a 0-dim double beside float stays float).
  c10::ScalarType common = float_result_type(x.scalar_type());
  for (const at::Tensor* t : {&dx, &grad_x, &dgrad_glu}) {
    check_device(op, *t);
    common = at::result_type(at::empty({1}, t->options().device(at::kMeta).dtype(common)), *t);
  }
  TORCH_CHECK(x.scalar_type() != at::kBool && dx.scalar_type() != at::kBool,
              "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
              "invert a mask, use the `~` or `logical_not()` operator instead.");
  check_result_dtype(op, common, x);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(common), "\"", op, "\" not implemented for '",
                              c10::toString(common), "' on ", x.device());
  auto as_common = [&](const at::Tensor& t) { return (t.scalar_type() == common ? t : t.to(common)).expand(shape); };
  // The CPU concatenates the halves along dim of the broadcast result.
  std::vector<int64_t> out_shape = shape;
  out_shape[dim] *= 2;
  at::Tensor out = at::empty(out_shape, x.options().dtype(common).memory_format(
                                            backward_jvp_format(grad_x, x, dgrad_glu, dx, dim, half)));
  dispatch_glu(kernels.get(Variant::strided, common, common), op, 2,
               {out.narrow(dim, 0, shape[dim]), out.narrow(dim, shape[dim], shape[dim]), as_common(grad_x_a),
                as_common(a), as_common(b), as_common(dgrad_glu), as_common(da), as_common(db)});
  return out;
}

}  // namespace mps_ops
