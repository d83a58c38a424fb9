// Host stubs of mse_loss, smooth_l1_loss, huber_loss and
// binary_cross_entropy, forward and backward (functional and out=):
// `override` ops, whose stock MPS kernels run MPSGraph (torch 2.9 to 2.15).
// Kernels in csrc/kernels/pointwise_losses.metal. Checks, messages, dtype
// and shape rules are the CPU's, in its order; each loss's differ (its
// TensorIterator's configuration), so each stub states its own.
#include "../runtime/element_pairs.h"
#include "../runtime/host_name.h"
#include "../runtime/error_checks.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/reduction.h"
#include "../runtime/per_element.h"

#include "../kernels/include/mps_ops/shape_limits.h"
#include "../kernels/pointwise_loss_params.h"

#include <ATen/ExpandUtils.h>
#include <ATen/core/Reduction.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/result_type.h>
#include <torch/version.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <vector>

namespace mps_ops {

namespace {

// Threads per group of the reduced forward's first pass, and its least
// loads per thread. Its groups are at most 4 x split_groups (reduction.h),
// several times what fills a GPU: binary_cross_entropy's first pass is
// compute-bound (two logarithms an element), and with split_groups groups
// every group started at once and their uneven ends left a long tail (H200
// ncu: 62% achieved occupancy, 78% of the issue rate; torch's CUDA kernel,
// of as many instructions, many groups deep: 90%). The merge, one group of
// up to 1024 threads, reads 4 partials per thread. (At 16 loads per thread
// and no bound, 2**26 elements left 16384 partials, 64 dependent loads per
// thread of a 256-thread merge: 29 us on an H200 otherwise idle, beside the
// first pass's 360.)
constexpr int64_t loss_group_threads = 256;
constexpr int64_t loss_elements_per_thread = 16;
constexpr int64_t loss_most_groups = 4 * split_groups;
constexpr int64_t loss_merge_threads = 1024;
// Elements per dispatch of the one-pass kernels, whose grid and indices are
// 32-bit (a piece's last element below 2**31).
constexpr int64_t loss_piece = int64_t{1} << 30;

enum class Allocated {
  by_iterator,  // the TensorIterator's layout (iterator_output_strides)
  like_input,   // empty_like(input): huber_loss, binary_cross_entropy (and its backward)
  contiguous,   // zeros_like(input, contiguous): mse_loss_backward
};

struct LossKind {
  const char* op;        // the aten name, for messages
  const char* cpu_name;  // the CPU's dtype-dispatch name, for its NotImplementedError
  bool raises_on_input;  // binary_cross_entropy: an input or target outside [0, 1]
  KernelCache& elements;  // reduction none
  KernelCache& partials;  // mean and sum, first pass
  KernelCache& backward;
  KernelCache& backward_pairs;  // half and bfloat16 operands two per 32-bit word
  // How the CPU's functional forms allocate an unreduced loss and the
  // gradient where the input has the broadcast shape (otherwise the
  // iterator resizes what they allocate, in its own layout).
  Allocated loss = Allocated::by_iterator;
  Allocated gradient = Allocated::by_iterator;
};

KernelCache mse_elements("mse_loss"), mse_partials("mse_loss_partials"), mse_backward_kernels("mse_loss_backward");
KernelCache smooth_l1_elements("smooth_l1_loss"), smooth_l1_partials("smooth_l1_loss_partials"),
    smooth_l1_backward_kernels("smooth_l1_loss_backward");
KernelCache huber_elements("huber_loss"), huber_partials("huber_loss_partials"),
    huber_backward_kernels("huber_loss_backward");
KernelCache bce_elements("binary_cross_entropy"), bce_partials("binary_cross_entropy_partials"),
    bce_backward_kernels("binary_cross_entropy_backward");
// Half and bfloat16 only (one declaration each: the registry's check reads them).
KernelCache mse_backward_pairs("mse_loss_backward_pairs");
KernelCache smooth_l1_backward_pairs("smooth_l1_loss_backward_pairs");
KernelCache huber_backward_pairs("huber_loss_backward_pairs");
KernelCache bce_backward_pairs("binary_cross_entropy_backward_pairs");
KernelCache loss_merge("pointwise_loss_merge");  // every loss's second pass

const LossKind mse_kind{"mse_loss", "mse_cpu", false, mse_elements, mse_partials, mse_backward_kernels,
                        mse_backward_pairs, Allocated::by_iterator, Allocated::contiguous};
const LossKind smooth_l1_kind{"smooth_l1_loss", "smooth_l1_cpu", false, smooth_l1_elements, smooth_l1_partials,
                              smooth_l1_backward_kernels, smooth_l1_backward_pairs};
const LossKind huber_kind{"huber_loss", "huber_cpu", false, huber_elements, huber_partials, huber_backward_kernels,
                          huber_backward_pairs, Allocated::like_input};
const LossKind bce_kind{"binary_cross_entropy", "binary_cross_entropy", true, bce_elements, bce_partials,
                        bce_backward_kernels, bce_backward_pairs, Allocated::like_input, Allocated::like_input};

// Operands the kernels read flat, in one order: where every one (expanded to
// the op's shape) is dense with the same strides, their own memory in
// storage order, else copies in the CPU's iterator's layout. `strides` is
// that order's, which the element-wise results take.
struct FlatOperands {
  std::vector<at::Tensor> tensors;
  std::vector<int64_t> strides;
};

FlatOperands flat_operands(std::initializer_list<at::Tensor> tensors, at::IntArrayRef shape) {
  FlatOperands flat;
  for (const at::Tensor& t : tensors) {
    flat.tensors.push_back(t.expand(shape));
  }
  const at::Tensor& first = flat.tensors.front();
  const bool shared = std::all_of(flat.tensors.begin(), flat.tensors.end(), [&](const at::Tensor& t) {
    return t.is_non_overlapping_and_dense() && t.strides() == first.strides();
  });
  if (!shared) {
    // Copies in the layout the CPU's iterator gives the result (the input,
    // first, decides where layouts disagree), so the loss (or gradient)
    // comes out in it: a channels-last input's stays channels-last.
    std::vector<const at::Tensor*> operands;
    for (const at::Tensor& t : flat.tensors) {
      operands.push_back(&t);
    }
    const std::vector<int64_t> strides = iterator_output_strides(operands);
    for (at::Tensor& t : flat.tensors) {
      if (!(t.is_non_overlapping_and_dense() && t.strides() == at::IntArrayRef(strides))) {
        t = at::empty_strided(shape, strides, t.options()).copy_(t);
      }
    }
  }
  flat.strides = flat.tensors.front().strides().vec();
  return flat;
}

// The CPU's checks of smooth_l1_loss's beta and huber_loss's delta.
void check_threshold(const LossKind& kind, double threshold) {
  if (&kind == &smooth_l1_kind) {
    TORCH_CHECK(threshold >= 0, "smooth_l1_loss does not support negative values for beta.");
  } else if (&kind == &huber_kind) {
    TORCH_CHECK(threshold > 0, "huber_loss does not support non-positive values for delta.");
  }
}

// The compute dtype exists in the CPU's kernels (floating) and in Metal.
void check_compute_dtype(const LossKind& kind, c10::ScalarType dtype, const at::Tensor& like) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(dtype), "\"", kind.cpu_name, "\" not implemented for '",
                              c10::toString(dtype), "' on ", like.device());
  check_result_dtype(kind.op, dtype, like);
}

void check_castable(c10::ScalarType result, c10::ScalarType out) {
  TORCH_CHECK(c10::canCast(result, out), "result type ", result, " can't be cast to the desired output type ", out);
}

std::vector<int64_t> squeezed(at::IntArrayRef sizes) {
  std::vector<int64_t> kept;
  std::copy_if(sizes.begin(), sizes.end(), std::back_inserter(kept), [](int64_t s) { return s != 1; });
  return kept;
}

// binary_cross_entropy's CPU kernels iterate over squeezed operands into a
// squeezed view of the loss (the input's shape, or the caller's out= or
// grad_input=, never resized): the operands' squeezed shapes broadcast
// together, and to the loss's squeezed shape exactly (else the CPU writes
// past the view or leaves it partly unwritten). Returns the operands as
// the loss's shape.
std::vector<at::Tensor> as_loss_shape(const char* op, std::initializer_list<const at::Tensor*> operands,
                                      at::IntArrayRef loss_shape) {
  std::vector<int64_t> joint;
  for (const at::Tensor* t : operands) {
    joint = at::infer_size(joint, squeezed(t->sizes()));
  }
  TORCH_CHECK(squeezed(loss_shape) == joint, op, ": the loss of shape ", loss_shape,
              " cannot hold the operands' broadcast (squeezed) shape ", at::IntArrayRef(joint));
  std::vector<at::Tensor> shaped;
  for (const at::Tensor* t : operands) {
    shaped.push_back(t->sizes() == loss_shape ? *t : t->squeeze().expand(joint).reshape(loss_shape));
  }
  return shaped;
}

// binary_cross_entropy's weight multiplies the loss in place: it broadcasts
// to the loss's shape, no further.
void check_broadcasts_to(at::IntArrayRef shape, const at::Tensor& t) {
  const std::vector<int64_t> joint = at::infer_size(shape, t.sizes());
  TORCH_CHECK(at::IntArrayRef(joint) == shape, "output with shape ", shape, " doesn't match the broadcast shape ",
              at::IntArrayRef(joint));
}

// The operand that tells the device: a device tensor among them (a 0-dim
// CPU operand may stand beside it), else the first.
const at::Tensor& on_device(std::initializer_list<const at::Tensor*> operands) {
  for (const at::Tensor* t : operands) {
    if (!t->is_cpu()) {
      return *t;
    }
  }
  return **operands.begin();
}

// binary_cross_entropy's weight, where given: a Metal dtype (cast to the
// loss's), broadcast to the loss's shape.
void check_weight(const char* op, const at::Tensor* weight, at::IntArrayRef shape) {
  if (weight != nullptr) {
    check_dtype(op, *weight);
    check_broadcasts_to(shape, *weight);
  }
}

// An operand as the kernels read it: of the compute dtype, and on the
// device (a 0-dim CPU operand, which the CPU's iterators accept beside device
// tensors, is copied there: the kernels read every operand as a buffer).
at::Tensor as_operand(const at::Tensor& t, c10::ScalarType dtype, const at::Tensor& like) {
  return t.device() == like.device() && t.scalar_type() == dtype ? t : t.to(like.device(), dtype);
}

pointwise_loss_params loss_params(int64_t n, double threshold) {
  pointwise_loss_params p{};
  p.n = n;
  p.threshold = static_cast<float>(threshold);
  p.norm = 1.0f;
  return p;
}

// A buffer over elements [start, start + count) of a flat operand.
BufferSpan piece_of(const at::Tensor& t, int64_t start, int64_t count) {
  const size_t size = t.element_size();
  return BufferSpan{t, static_cast<const char*>(t.const_data_ptr()) + start * size, count * size};
}

// An output of `shape` in the operands' order; the caller's where it has
// that layout and dtype, else a stand-in copied into it afterwards.
struct FlatOutput {
  at::Tensor tensor;
  at::Tensor* caller = nullptr;
  void copy_back() const {
    if (caller != nullptr && !caller->is_same(tensor)) {
      caller->copy_(tensor);
    }
  }
};

FlatOutput flat_output(at::Tensor* out, at::IntArrayRef shape, const FlatOperands& flat, c10::ScalarType dtype,
                       const at::Tensor& like) {
  if (out != nullptr && out->scalar_type() == dtype && out->strides() == at::IntArrayRef(flat.strides)) {
    return FlatOutput{*out, out};
  }
  return FlatOutput{at::empty_strided(shape, flat.strides, like.options().dtype(dtype)), out};
}

// A one-pass kernel (element-wise tiles) over `like`'s elements, in pieces
// of loss_piece: bind_piece binds a piece's operands, then the params (with
// the piece's count) follow.
template <class BindPiece>
void in_pieces(const KernelHandle* kernel, const at::Tensor& like, pointwise_loss_params p, BindPiece bind_piece) {
  const int64_t n = like.numel();
  const uint32_t per_thread = elements_per_thread(like.element_size());
  for (int64_t start = 0; start < n; start += loss_piece) {
    const int64_t count = std::min(loss_piece, n - start);
    p.n = count;
    KernelFunction function(kernel);
    bind_piece(function, start, count);
    function.bind(p);
    function.dispatch(Dim3{tiled_threads(static_cast<uint32_t>(count), per_thread), 1, 1});
  }
}

// Reduction none: out = each element's loss, pieces of loss_piece elements.
void loss_elements(const LossKind& kind, const FlatOperands& flat, bool weighted, pointwise_loss_params p,
                   const at::Tensor& out, const KernelFlag& flag) {
  const at::Tensor &x = flat.tensors[0], &y = flat.tensors[1], &w = weighted ? flat.tensors[2] : x;
  const c10::ScalarType dtype = x.scalar_type();
  const KernelHandle* kernel = kind.elements.get(Variant::dense, dtype, dtype);
  in_pieces(kernel, x, p, [&](KernelFunction& function, int64_t start, int64_t count) {
    function.bind_operands(piece_of(out, start, count), piece_of(x, start, count), piece_of(y, start, count),
                           piece_of(w, weighted ? start : 0, weighted ? count : 1), flag);
  });
}

// Mean and sum: each group's chunk, then the chunks in order, into out (0-dim).
void loss_reduced(const LossKind& kind, const FlatOperands& flat, bool weighted, pointwise_loss_params p,
                  int64_t reduction, const at::Tensor& out, const KernelFlag& flag) {
  const at::Tensor &x = flat.tensors[0], &y = flat.tensors[1], &w = weighted ? flat.tensors[2] : x;
  const c10::ScalarType dtype = x.scalar_type();
  const int64_t n = x.numel();
  const ChunkedPasses passes = chunked_passes(n, loss_group_threads * loss_elements_per_thread, loss_most_groups);
  const int64_t groups = passes.groups;
  p.chunk = passes.chunk;
  // The kernel's offsets inside a chunk are 32-bit (2**41 elements and more:
  // no GPU holds them).
  TORCH_CHECK(p.chunk < (int64_t{1} << 31), "mps_ops: ", kind.op, " over ", n, " elements");
  p.mean = reduction == at::Reduction::Mean ? 1 : 0;
  const at::Tensor partials = at::empty({groups}, x.options().dtype(at::kFloat));
  const KernelHandle* partial_kernel = kind.partials.get(Variant::reduce, dtype, dtype);
  const uint32_t threads = static_cast<uint32_t>(
      std::min<int64_t>(loss_group_threads, backend().max_threads_per_group(partial_kernel)));
  KernelFunction first(partial_kernel);
  first.bind_operands(partials, x, y, w, flag).bind(p);
  first.dispatch(Dim3{threads * static_cast<uint32_t>(groups), 1, 1}, Dim3{threads, 1, 1});
  const c10::ScalarType out_dtype = out.scalar_type();
  const KernelHandle* merge_kernel = loss_merge.get(Variant::reduce, out_dtype, out_dtype);
  const uint32_t merge_threads = merge_group_threads(groups, loss_merge_threads, merge_kernel);
  KernelFunction second(merge_kernel);
  second.bind_operands(out, partials).bind(static_cast<uint32_t>(groups), p);
  second.dispatch(Dim3{merge_threads, 1, 1}, Dim3{merge_threads, 1, 1});
}

// A functional form's result where the CPU allocates it otherwise than by
// its iterator (`how`), for an input of the broadcast shape; else undefined.
at::Tensor functional_result(Allocated how, const at::Tensor& self, at::IntArrayRef shape, c10::ScalarType dtype) {
  if (how == Allocated::by_iterator || self.sizes() != shape) {
    return at::Tensor();
  }
  return how == Allocated::contiguous ? at::empty(shape, self.options().dtype(dtype)) : empty_output_like(self, dtype);
}

// The forward into a result of `result_dtype` (out, where given, checked
// against it by `rule`), computed in `dtype` over operands already of it and
// of the op's `shape`.
at::Tensor forward_into(const LossKind& kind, const at::Tensor& self, const at::Tensor& target,
                        const at::Tensor* weight, int64_t reduction, double threshold, c10::ScalarType dtype,
                        c10::ScalarType result_dtype, at::IntArrayRef shape, at::Tensor* out,
                        OutputDtype rule) {
  const bool reduced = reduction != at::Reduction::None;
  const at::IntArrayRef result_shape = reduced ? at::IntArrayRef{} : shape;
  if (out != nullptr && reduced) {
    check_output(kind.op, *out, result_dtype, result_shape, {&self, &target}, rule);
  } else if (out != nullptr) {
    check_elementwise_output(kind.op, *out, result_dtype, result_shape, {&self, &target}, rule, {&self, &target});
  }
  const at::Tensor& like = on_device({&self, &target});
  at::Tensor own_result;
  if (out == nullptr && !reduced) {
    own_result = functional_result(kind.loss, self, shape, result_dtype);
    out = own_result.defined() ? &own_result : nullptr;
  }
  const FlatOperands flat = weight != nullptr
                                ? flat_operands({as_operand(self, dtype, like), as_operand(target, dtype, like),
                                                 as_operand(*weight, dtype, like)}, shape)
                                : flat_operands({as_operand(self, dtype, like), as_operand(target, dtype, like)}, shape);
  // binary_cross_entropy's flags: an input, a target outside [0, 1] (the
  // other losses' kernels bind it and never raise it).
  KernelFlag flag(2);
  pointwise_loss_params p = loss_params(flat.tensors[0].numel(), threshold);
  p.weighted = weight != nullptr ? 1 : 0;
  at::Tensor result;
  if (reduced) {
    // The merge reads float partials: it writes the result's dtype itself
    // where Metal has it, rounding once (the CPU's mean_out does too).
    // An out= of that dtype (0-dim now) takes the result directly.
    const bool metal_result = result_dtype == at::kFloat || result_dtype == at::kHalf || result_dtype == at::kBFloat16;
    const c10::ScalarType merged = metal_result ? result_dtype : dtype;
    result = out != nullptr && out->scalar_type() == merged ? *out : at::empty({}, like.options().dtype(merged));
    loss_reduced(kind, flat, weight != nullptr, p, reduction, result, flag);
  } else {
    const FlatOutput target_out = flat_output(out, shape, flat, dtype, like);
    loss_elements(kind, flat, weight != nullptr, p, target_out.tensor, flag);
    result = target_out.tensor;
  }
  if (kind.raises_on_input) {
    // After the kernels (kernel_flag.h says why).
    check_flag(kind.op, std::move(flag), [](const KernelFlag& out_of_domain) {
      TORCH_CHECK(!out_of_domain.raised(0), "all elements of input should be between 0 and 1");
      TORCH_CHECK(!out_of_domain.raised(1), "all elements of target should be between 0 and 1");
    });
  }
  if (out != nullptr) {
    if (!out->is_same(result)) {
      out->copy_(result);
    }
    return *out;
  }
  return result.scalar_type() == result_dtype ? result : result.to(result_dtype);
}

// A reduction that is neither none, mean nor sum: the CPU's mse_loss and
// smooth_l1_loss raise (an internal assert, RuntimeError) once their checks
// have passed; its huber_loss and binary_cross_entropy leave the loss
// unreduced (apply_loss_reduction). Ours summed it.
void check_reduction(const LossKind& kind, int64_t reduction, c10::ScalarType dtype, const at::Tensor& self) {
  TORCH_CHECK(reduction == at::Reduction::None || reduction == at::Reduction::Mean ||
                  reduction == at::Reduction::Sum,
              kind.op, ": reduction ", reduction, " is none of 0 (none), 1 (mean) and 2 (sum) (", dtype, " on ",
              self.device(), ")");
}
int64_t unreduced_unless_mean_or_sum(int64_t reduction) {
  return reduction == at::Reduction::Mean || reduction == at::Reduction::Sum ? reduction : at::Reduction::None;
}

// mse_loss, smooth_l1_loss: the operands promoted to their common dtype,
// broadcast; the result of that dtype (structured TensorIterator ops: an
// out= of any dtype it casts to).
at::Tensor promoting_forward(const LossKind& kind, const at::Tensor& self, const at::Tensor& target,
                             int64_t reduction, double threshold, at::Tensor* out) {
  check_devices(kind.op, {&self, &target});
  check_threshold(kind, threshold);
  const c10::ScalarType dtype = at::result_type(self, target);
  const std::vector<int64_t> shape = at::infer_size(self.sizes(), target.sizes());
  if (out != nullptr) {
    check_out_dtype_first(dtype, *out, OutputDtype::castable);
  }
  check_compute_dtype(kind, dtype, self);
  check_reduction(kind, reduction, dtype, self);
  const c10::ScalarType result_dtype = out != nullptr ? out->scalar_type() : dtype;
  return forward_into(kind, self, target, nullptr, reduction, threshold, dtype, result_dtype, shape, out,
                      OutputDtype::castable);
}

// huber_loss: the common dtype, the result of the input's (cast to it).
at::Tensor huber_forward(const at::Tensor& self, const at::Tensor& target, int64_t reduction_arg, double delta,
                         at::Tensor* out) {
  const LossKind& kind = huber_kind;
  const int64_t reduction = unreduced_unless_mean_or_sum(reduction_arg);
  check_devices(kind.op, {&self, &target});
  check_threshold(kind, delta);
  const c10::ScalarType dtype = at::result_type(self, target);
  const c10::ScalarType result_dtype = out != nullptr ? out->scalar_type() : self.scalar_type();
  check_castable(dtype, result_dtype);
  check_compute_dtype(kind, dtype, self);
  const std::vector<int64_t> shape = at::infer_size(self.sizes(), target.sizes());
  return forward_into(kind, self, target, nullptr, reduction, delta, dtype, result_dtype, shape, out,
                      OutputDtype::castable);
}

// binary_cross_entropy: every operand of the result's dtype (the input's, or
// out's), the shapes as_loss_shape says; a weight of any floating dtype, cast.
at::Tensor bce_forward(const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight_opt,
                       int64_t reduction_arg, at::Tensor* out) {
  const LossKind& kind = bce_kind;
  const int64_t reduction = unreduced_unless_mean_or_sum(reduction_arg);
  const at::Tensor* weight = optional_pointer(weight_opt);
  check_devices(kind.op, {&self, &target, weight});
  const c10::ScalarType dtype = out != nullptr ? out->scalar_type() : self.scalar_type();
  check_same_dtype(dtype, {&self, &target});
  check_compute_dtype(kind, dtype, self);
  // The CPU's loss: the input's shape, or an unreduced out='s own.
  const at::IntArrayRef shape = out != nullptr && reduction == at::Reduction::None ? out->sizes() : self.sizes();
  const std::vector<at::Tensor> shaped = as_loss_shape(kind.op, {&self, &target}, shape);
  if (out != nullptr && reduction != at::Reduction::None) {
    // It writes the unreduced loss into out first, then reduces that.
    as_loss_shape(kind.op, {&self, &target}, out->sizes());
  }
  check_weight(kind.op, weight, shape);
  return forward_into(kind, shaped[0], shaped[1], weight, reduction, 0.0, dtype, dtype, shape, out,
                      OutputDtype::exact);
}

// The backward: grad_input of `shape` in `result_dtype`, computed in `dtype`.
// norm: the CPU's factor for the reduction (over the input's numel).
at::Tensor backward_into(const LossKind& kind, const at::Tensor& grad, const at::Tensor& self,
                         const at::Tensor& target, const at::Tensor* weight, int64_t reduction, double threshold,
                         double scale, c10::ScalarType dtype, c10::ScalarType result_dtype, at::IntArrayRef shape,
                         at::Tensor* grad_input, int64_t mean_count) {
  if (grad_input != nullptr) {
    check_elementwise_output(kind.op, *grad_input, result_dtype, shape, {&self, &target, &grad}, OutputDtype::castable,
                             weight != nullptr ? std::initializer_list<const at::Tensor*>{&grad, &self, &target, weight}
                                               : std::initializer_list<const at::Tensor*>{&grad, &self, &target});
  }
  const at::Tensor& like = on_device({&self, &target, &grad});
  at::Tensor own_gradient;
  if (grad_input == nullptr) {
    own_gradient = functional_result(kind.gradient, self, shape, result_dtype);
    grad_input = own_gradient.defined() ? &own_gradient : nullptr;
  }
  // One incoming gradient for all (a reduced loss's) is read as a value.
  const bool grad_per_element = grad.numel() != 1;
  const FlatOperands flat = [&] {
    const at::Tensor x = as_operand(self, dtype, like), y = as_operand(target, dtype, like), g = as_operand(grad, dtype, like);
    if (weight != nullptr) {
      const at::Tensor w = as_operand(*weight, dtype, like);
      return grad_per_element ? flat_operands({x, y, w, g}, shape) : flat_operands({x, y, w}, shape);
    }
    return grad_per_element ? flat_operands({x, y, g}, shape) : flat_operands({x, y}, shape);
  }();
  const at::Tensor single_grad = grad_per_element ? at::Tensor() : as_operand(grad, dtype, like).reshape({1});
  const at::Tensor& x = flat.tensors[0];
  const at::Tensor& y = flat.tensors[1];
  const at::Tensor& w = weight != nullptr ? flat.tensors[2] : x;
  const at::Tensor& g = grad_per_element ? flat.tensors.back() : single_grad;
  pointwise_loss_params p = loss_params(0, threshold);
  p.norm = static_cast<float>(reduction == at::Reduction::Mean ? scale / static_cast<double>(mean_count) : scale);
  p.weighted = weight != nullptr ? 1 : 0;
  p.grad_per_element = grad_per_element ? 1 : 0;
  const FlatOutput out = flat_output(grad_input, shape, flat, dtype, like);
  // Two elements per 32-bit word where every operand allows it (an even
  // count, so every piece's start is a word too): element_pairs.h says why.
  // (w is x without a weight; g one value, read as an element, for a reduced loss.)
  const bool paired = in_element_pairs(x.numel(), {&out.tensor, &x, &y, &w, grad_per_element ? &g : &x});
  const KernelHandle* kernel = (paired ? kind.backward_pairs : kind.backward).get(Variant::dense, dtype, dtype);
  in_pieces(kernel, x, p, [&](KernelFunction& function, int64_t start, int64_t count) {
    function.bind_operands(piece_of(out.tensor, start, count), piece_of(x, start, count), piece_of(y, start, count),
                           piece_of(w, weight != nullptr ? start : 0, weight != nullptr ? count : 1),
                           piece_of(g, grad_per_element ? start : 0, grad_per_element ? count : 1));
  });
  if (grad_input != nullptr) {
    out.copy_back();
    return *grad_input;
  }
  return out.tensor.scalar_type() == result_dtype ? out.tensor : out.tensor.to(result_dtype);
}

// mse_loss_backward, smooth_l1_loss_backward: every operand promoted to the
// common dtype, the result of the input's (cast to it where it can be),
// over the broadcast shape of all three.
at::Tensor promoting_backward(const LossKind& kind, const at::Tensor& grad, const at::Tensor& self,
                              const at::Tensor& target, int64_t reduction, double threshold, double scale,
                              at::Tensor* grad_input) {
  check_devices(kind.op, {&grad, &self, &target});
  at::native::ResultTypeState state{};
  for (const at::Tensor* t : {&self, &target, &grad}) {
    state = at::native::update_result_type_state(*t, state);
  }
  const c10::ScalarType dtype = at::native::result_type(state);
  const c10::ScalarType result_dtype = grad_input != nullptr ? grad_input->scalar_type() : self.scalar_type();
  check_castable(dtype, result_dtype);
  check_compute_dtype(kind, dtype, self);
  const std::vector<int64_t> shape = at::infer_size(at::infer_size(self.sizes(), target.sizes()), grad.sizes());
  return backward_into(kind, grad, self, target, nullptr, reduction, threshold, scale, dtype, result_dtype, shape,
                       grad_input, self.numel());
}

// huber_loss_backward's iterator (and mse_loss_backward's before torch
// 2.13) neither promotes nor casts: every operand of grad_input's dtype
// (the input's for the functional form).
at::Tensor exact_backward(const LossKind& kind, const at::Tensor& grad, const at::Tensor& self,
                          const at::Tensor& target, int64_t reduction, double threshold, double scale,
                          at::Tensor* grad_input) {
  check_devices(kind.op, {&grad, &self, &target});
  const c10::ScalarType dtype = grad_input != nullptr ? grad_input->scalar_type() : self.scalar_type();
  check_same_dtype(dtype, {&self, &target, &grad});
  check_compute_dtype(kind, dtype, self);
  const std::vector<int64_t> shape = at::infer_size(at::infer_size(self.sizes(), target.sizes()), grad.sizes());
  return backward_into(kind, grad, self, target, nullptr, reduction, threshold, scale, dtype, dtype, shape,
                       grad_input, self.numel());
}

// mse_loss_backward's iterator promotes from torch 2.13 on (2.11's CPU
// refuses a half input beside a float target; 2.12 is taken to be 2.11's).
constexpr bool mse_backward_promotes =
    TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 13);

at::Tensor mse_loss_backward_of(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                        int64_t reduction, at::Tensor* grad_input) {
  return mse_backward_promotes
             ? promoting_backward(mse_kind, grad, self, target, reduction, 0.0, 2.0, grad_input)
             : exact_backward(mse_kind, grad, self, target, reduction, 0.0, 2.0, grad_input);
}

}  // namespace

at::Tensor mse_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  return promoting_forward(mse_kind, self, target, reduction, 0.0, nullptr);
}

at::Tensor& mse_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction, at::Tensor& out) {
  promoting_forward(mse_kind, self, target, reduction, 0.0, &out);
  return out;
}

at::Tensor smooth_l1_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double beta) {
  return promoting_forward(smooth_l1_kind, self, target, reduction, beta, nullptr);
}

at::Tensor& smooth_l1_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double beta,
                               at::Tensor& out) {
  promoting_forward(smooth_l1_kind, self, target, reduction, beta, &out);
  return out;
}

at::Tensor huber_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double delta) {
  return huber_forward(self, target, reduction, delta, nullptr);
}

at::Tensor& huber_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double delta,
                           at::Tensor& out) {
  huber_forward(self, target, reduction, delta, &out);
  return out;
}

at::Tensor binary_cross_entropy(const at::Tensor& self, const at::Tensor& target,
                                const std::optional<at::Tensor>& weight, int64_t reduction) {
  return bce_forward(self, target, weight, reduction, nullptr);
}

at::Tensor& binary_cross_entropy_out(const at::Tensor& self, const at::Tensor& target,
                                     const std::optional<at::Tensor>& weight, int64_t reduction, at::Tensor& out) {
  bce_forward(self, target, weight, reduction, &out);
  return out;
}

at::Tensor mse_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             int64_t reduction) {
  return mse_loss_backward_of(grad_output, self, target, reduction, nullptr);
}

at::Tensor& mse_loss_backward_grad_input(const at::Tensor& grad_output, const at::Tensor& self,
                                         const at::Tensor& target, int64_t reduction, at::Tensor& grad_input) {
  mse_loss_backward_of(grad_output, self, target, reduction, &grad_input);
  return grad_input;
}

// Any beta, even a negative one, takes the rule's formula, as on the CPU.
at::Tensor& smooth_l1_loss_backward_grad_input(const at::Tensor& grad_output, const at::Tensor& self,
                                               const at::Tensor& target, int64_t reduction, double beta,
                                               at::Tensor& grad_input) {
  promoting_backward(smooth_l1_kind, grad_output, self, target, reduction, beta, 1.0, &grad_input);
  return grad_input;
}

at::Tensor& huber_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                    int64_t reduction, double delta, at::Tensor& grad_input) {
  exact_backward(huber_kind, grad_output, self, target, reduction, delta, 1.0, &grad_input);
  return grad_input;
}

namespace {

at::Tensor bce_backward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                        const std::optional<at::Tensor>& weight_opt, int64_t reduction, at::Tensor* grad_input) {
  const LossKind& kind = bce_kind;
  const at::Tensor* weight = optional_pointer(weight_opt);
  check_devices(kind.op, {&grad, &self, &target, weight});
  const c10::ScalarType dtype = grad_input != nullptr ? grad_input->scalar_type() : self.scalar_type();
  check_same_dtype(dtype, {&grad, &self, &target});
  check_compute_dtype(kind, dtype, self);
  const at::IntArrayRef shape = grad_input != nullptr ? grad_input->sizes() : self.sizes();
  const std::vector<at::Tensor> shaped = as_loss_shape(kind.op, {&grad, &self, &target}, shape);
  check_weight(kind.op, weight, shape);
  // The mean's 1 / n counts the input's elements.
  return backward_into(kind, shaped[0], shaped[1], shaped[2], weight, reduction, 0.0, 1.0, dtype, dtype, shape,
                       grad_input, self.numel());
}

}  // namespace

at::Tensor binary_cross_entropy_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                         const at::Tensor& target, const std::optional<at::Tensor>& weight,
                                         int64_t reduction) {
  return bce_backward(grad_output, self, target, weight, reduction, nullptr);
}

at::Tensor& binary_cross_entropy_backward_grad_input(const at::Tensor& grad_output, const at::Tensor& self,
                                                     const at::Tensor& target,
                                                     const std::optional<at::Tensor>& weight, int64_t reduction,
                                                     at::Tensor& grad_input) {
  bce_backward(grad_output, self, target, weight, reduction, &grad_input);
  return grad_input;
}

}  // namespace mps_ops
