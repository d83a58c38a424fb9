// Host stubs of segment_reduce (torch.segment_reduce) and
// _segment_reduce_backward; kernels in csrc/kernels/segment_reduce.metal.
// Lengths become offsets here (a cumsum on the device); with !unsafe the
// lengths are checked as the CPU checks them (a reduction that waits for the
// GPU on a Mac).
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/per_element.h"

#include "../kernels/segment_reduce_params.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/max.h>
#include <ATen/ops/min.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros.h>

namespace mps_ops {

namespace {

// The CPU's names: amax and amin are max and min.
int reduction_code(c10::string_view reduce) {
  if (reduce == "sum") return 0;
  if (reduce == "mean") return 1;
  if (reduce == "max" || reduce == "amax") return 2;
  if (reduce == "min" || reduce == "amin") return 3;
  if (reduce == "prod") return 4;
  TORCH_CHECK(false, "reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
}

struct SegmentPlan {
  segment_params params;
  at::Tensor data;     // contiguous
  at::Tensor offsets;  // (outer, segments + 1), long, contiguous
  std::vector<int64_t> output_shape;
};

// Each row's segment ends from its lengths, after a 0.
at::Tensor offsets_from_lengths(const at::Tensor& lengths) {
  const at::Tensor ends = at::cumsum(lengths, -1, at::kLong);
  std::vector<int64_t> zero_shape(lengths.sizes().begin(), lengths.sizes().end());
  zero_shape.back() = 1;
  return at::cat({at::zeros(zero_shape, ends.options()), ends}, -1);
}

// What check_segments tests, still on the device (none without segments):
// the smallest step between neighbouring offsets, and the smallest and
// largest offset. Every offset, not each row's first and last: a step
// between offsets near the int64 limits wraps, so steps >= 0 alone do not
// order them (lengths whose running sum wraps pass it). Offsets made from
// `lengths` step by the lengths themselves (wrapped alike), so their
// smallest step is the lengths' minimum: no pass over the steps. Read back
// with read_back, together with whatever else the call checks: on a Mac
// each read waits for the GPU.
std::vector<at::Tensor> segment_bounds(const at::Tensor& offset_table, const at::Tensor* lengths) {
  if (offset_table.size(-1) < 2 || offset_table.numel() == 0) {
    return {};
  }
  const int64_t segments = offset_table.size(-1) - 1;
  const at::Tensor smallest_step =
      lengths != nullptr
          ? at::min(*lengths)
          : at::min(at::sub(offset_table.narrow(-1, 1, segments), offset_table.narrow(-1, 0, segments)));
  const auto [lowest, highest] = at::aminmax(offset_table);
  return {smallest_step, lowest, highest};
}

// Segments must lie inside the data, in order: every segment's length is
// >= 0 (the CPU's own check, RuntimeError) and each row's offsets stay
// within [0, length] (the CPU reads outside the data there; we refuse, also
// when unsafe). `bounds`: segment_bounds' values, empty without segments.
// (The lengths' own checks do not stand for these: lengths that pass them
// can still wrap their int64 running sum.)
void check_segments(const char* op, c10::ArrayRef<int64_t> bounds, int64_t length) {
  if (bounds.empty()) {
    return;
  }
  TORCH_CHECK(bounds[0] >= 0, "Expected segment_length >= 0 to be true, but got false. (", op,
              ": lengths must be non-negative and offsets non-decreasing)");
  TORCH_CHECK(bounds[1] >= 0 && bounds[2] <= length, op, ": segments must lie within the ", length,
              " elements of data along axis, but offsets span [", bounds[1], ", ", bounds[2], "]");
}

SegmentPlan plan_segments(const char* op, const at::Tensor& data, c10::string_view reduce,
                          const std::optional<at::Tensor>& lengths, const std::optional<at::Tensor>& offsets,
                          int64_t axis, bool unsafe, const std::optional<at::Scalar>& initial) {
  check_device(op, data);
  const bool has_lengths = lengths && lengths->defined(), has_offsets = offsets && offsets->defined();
  TORCH_CHECK(has_lengths || has_offsets, "segment_reduce(): Either lengths or offsets must be defined.");
  const at::Tensor& given = has_lengths ? *lengths : *offsets;
  const char* given_name = has_lengths ? "lengths" : "offsets";
  check_device(op, given);
  // The forward checks the dims; the CPU's backward reads them unchecked (IndexError).
  if (std::string_view(op) == "_segment_reduce_backward") {
    TORCH_CHECK_INDEX(given.dim() > 0 && data.dim() >= given.dim(), "Dimension out of range (", op, ": ", given_name,
                      " of ", given.dim(), " dims for data of ", data.dim(), ")");
  }
  TORCH_CHECK(data.dim() >= given.dim(), "Expected data.dim() >= ", given_name, ".dim() to be true, but got false.");
  axis = at::maybe_wrap_dim(axis, data.dim());
  TORCH_CHECK(axis == given.dim() - 1, "segment_reduce(): Expected axis to be the last dimension of ", given_name,
              " but got ", axis, ".");
  const int64_t length = data.size(axis);
  // The CPU's safe-mode checks, on lengths of any dtype, read back in one
  // copy with check_segments' values (raised after the dtype checks below,
  // in the CPU's order): one wait for the GPU where there were four.
  at::Tensor offset_table;
  std::vector<int64_t> bounds;
  const bool lengths_checked = has_lengths && !unsafe;
  if (lengths_checked) {
    TORCH_CHECK(lengths->numel() > 0, "min(): Expected reduction dim to be specified for input.numel() == 0.");
    offset_table = offsets_from_lengths(*lengths);
    // Lengths of some elements: the table has a segment, so its bounds
    // start with the lengths' minimum, the CPU's first check too.
    std::vector<at::Tensor> values = segment_bounds(offset_table, &*lengths);
    TORCH_INTERNAL_ASSERT(values.size() == 3);
    const auto [lo, hi] = at::aminmax(at::sum(*lengths, -1));
    values.push_back(lo);
    values.push_back(hi);
    const std::vector<int64_t> v = read_back(values);
    TORCH_CHECK(v[0] >= 0, "lengths contains negative value!");
    TORCH_CHECK(v[3] == length && v[4] == length,
                "segment_reduce(): Expected all rows of lengths along axis to sum to "
                "data.size(lengths.dim()-1) when !unsafe.");
    bounds.assign(v.begin(), v.begin() + 3);
  }
  const int code = reduction_code(reduce);
  TORCH_CHECK_NOT_IMPLEMENTED(given.scalar_type() == at::kLong || given.scalar_type() == at::kInt, "\"", op,
                              "\" not implemented for ", given_name, " of dtype '",
                              c10::toString(given.scalar_type()), "' on ", given.device());
  check_dtype(op, data);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(data.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(data.scalar_type()), "' on ", data.device());
  TORCH_CHECK(given.size(-1) >= (has_lengths ? 0 : 1), op, ": offsets need at least one element per row");
  if (!lengths_checked) {
    offset_table = has_lengths ? offsets_from_lengths(*lengths) : offsets->to(at::kLong);
    const std::vector<at::Tensor> values = segment_bounds(offset_table, has_lengths ? &*lengths : nullptr);
    if (!values.empty()) {
      bounds = read_back(values);
    }
  }
  check_segments(op, bounds, length);
  SegmentPlan plan;
  plan.data = data.contiguous();
  const int64_t segments = offset_table.size(-1) - 1;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.size(d);
  for (int64_t d = axis + 1; d < data.dim(); ++d) inner *= data.size(d);
  TORCH_CHECK(offset_table.sizes().slice(0, axis) == data.sizes().slice(0, axis), op, ": ", given_name,
              " must have the data's sizes before axis ", data.sizes().slice(0, axis), ", but got ",
              given.sizes());
  plan.offsets = offset_table.reshape({outer, segments + 1}).contiguous();
  plan.output_shape.assign(data.sizes().begin(), data.sizes().end());
  plan.output_shape[axis] = segments;
  plan.params = segment_params{outer, length, inner, segments, code, initial.has_value(),
                               initial ? static_cast<float>(initial->toDouble()) : 0.0f};
  return plan;
}

}  // namespace

at::Tensor segment_reduce(const at::Tensor& data, c10::string_view reduce,
                          const std::optional<at::Tensor>& lengths, const std::optional<at::Tensor>& indices,
                          const std::optional<at::Tensor>& offsets, int64_t axis, bool unsafe,
                          const std::optional<at::Scalar>& initial) {
  static KernelCache kernels("segment_reduce");
  TORCH_CHECK(!(indices && indices->defined()), "segment_reduce(): indices based reduction is not supported yet.");
  const SegmentPlan plan = plan_segments("segment_reduce", data, reduce, lengths, offsets, axis, unsafe, initial);
  at::Tensor out = at::empty(plan.output_shape, data.options());
  dispatch_per_element(kernels, out, {&out, &plan.data, &plan.offsets}, plan.params, segment_elements_per_thread);
  return out;
}

at::Tensor _segment_reduce_backward(const at::Tensor& grad, const at::Tensor& output, const at::Tensor& data,
                                    c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                                    const std::optional<at::Tensor>& offsets, int64_t axis,
                                    const std::optional<at::Scalar>& initial) {
  static KernelCache kernels("segment_reduce_backward");
  static KernelCache row_kernels("segment_of_rows");
  const SegmentPlan plan = plan_segments("_segment_reduce_backward", data, reduce, lengths, offsets, axis,
                                         /*unsafe=*/true, initial);
  check_device("_segment_reduce_backward", grad);
  check_device("_segment_reduce_backward", output);
  TORCH_CHECK_INDEX(output.dim() > 0, "Dimension specified as 0 but tensor has no dimensions "
                    "(_segment_reduce_backward's output)");
  TORCH_CHECK(grad.sizes() == output.sizes() && grad.sizes() == at::IntArrayRef(plan.output_shape),
              "_segment_reduce_backward: expected grad and output of shape ", at::IntArrayRef(plan.output_shape));
  TORCH_CHECK(grad.scalar_type() == data.scalar_type() && output.scalar_type() == data.scalar_type(),
              "_segment_reduce_backward: expected grad, output and data of one dtype");
  const at::Tensor grad_c = grad.contiguous(), output_c = output.contiguous();
  at::Tensor grad_data = at::empty(data.sizes(), data.options());
  if (plan.params.segments == 0) {
    return grad_data.zero_();
  }
  if (grad_data.numel() == 0) {
    return grad_data;
  }
  // Each data row's segment, found once per row (kernel: segment_of_rows).
  const segment_params& p = plan.params;
  TORCH_CHECK(p.outer * p.segments <= INT32_MAX, "mps_ops: _segment_reduce_backward over more than 2**31 - 1 "
              "segments (", p.outer, " x ", p.segments, ")");
  TORCH_CHECK(grad_data.numel() <= UINT32_MAX, "mps_ops: _segment_reduce_backward over more than 2**32 - 1 elements");
  const at::Tensor rows = at::empty({p.outer * p.length}, data.options().dtype(at::kInt));
  KernelFunction find_rows(row_kernels.get(Variant::dense, data.scalar_type(), data.scalar_type()));
  find_rows.bind_operands(rows, plan.offsets).bind(plan.params);
  find_rows.dispatch(Dim3{static_cast<uint32_t>(rows.numel()), 1, 1});
  dispatch_per_element(kernels, grad_data, {&grad_data, &grad_c, &output_c, &plan.data, &plan.offsets, &rows},
                       plan.params, segment_elements_per_thread);
  return grad_data;
}

}  // namespace mps_ops
