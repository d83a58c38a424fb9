// Host stubs of the fake-quantize ops with a gradient mask, which
// quantization-aware training runs on float tensors:
// fake_quantize_per_tensor_affine_cachemask (scale and zero point from the
// host), _fake_quantize_per_tensor_affine_cachemask_tensor_qparams (from
// one-element tensors, and a switch) and fake_quantize_per_channel_affine_cachemask;
// and _fused_moving_avg_obs_fq_helper, the observer and fake quantizer of the
// default QAT qconfig (FusedMovingAvgObsFakeQuantize) in one call.
// The composites over them (fake_quantize_per_tensor_affine, its
// tensor-qparams form, fake_quantize_per_channel_affine and their backward,
// grad * mask) then run too. Kernel in csrc/kernels/fake_quantize.metal.
//
// The checks and messages are the CPU's. Where the CPU reads a tensor's value
// on the host (the tensor-qparams form's three, `.item()`), the kernel reads
// it on the device: the host never waits, as on CUDA. The per-channel form's
// range check of integer zero points waits once, as on the CPU and CUDA.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/op_checks.h"
#include "../runtime/per_element.h"

#include "../kernels/fake_quantize_params.h"
#include "../kernels/include/mps_ops/shape_limits.h"

#include <ATen/ops/aminmax.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ExpandUtils.h>

#include <limits>
#include <numeric>

namespace mps_ops {
namespace {

// The CPU's message, its line continuation's spaces and all.
void check_quant_range(int64_t quant_min, int64_t quant_max) {
  TORCH_CHECK(quant_min <= quant_max, "`quant_min` should be less than or         equal to `quant_max`.");
}

// check_dtype (float64 has no Metal type), then the CPU's dtype dispatch's
// NotImplementedError for the other non-floating dtypes.
void check_fake_quantize_input(const char* op, const char* dispatch_name, const at::Tensor& self) {
  check_dtype(op, self);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"", dispatch_name,
                              "\" not implemented for '", c10::toString(self.scalar_type()), "' on ",
                              self.device(), " (", op, ")");
}

// Where each element's scale and zero point come from and how they combine.
struct QParams {
  fake_quantize_params params{};
  bool with_mask = true;  // false: the caller discards the mask (fake_quantize_values runs, no mask made)
  at::Tensor scales;  // float32, one per channel (buffers only)
  at::Tensor zero_points;  // int32, or float32 bits where params.zero_point_is_float
  at::Tensor enabled;  // int32, one (params.read_enabled only)
};

// t's values (in t's dtype) laid out as `like` (a fresh dense tensor): t
// itself where its strides are like's, else a copy.
at::Tensor in_memory_order_of(const at::Tensor& like, const at::Tensor& t) {
  const bool same_order = t.is_non_overlapping_and_dense() && t.strides() == like.strides();
  return same_order ? t : at::empty_strided(like.sizes(), like.strides(), t.options()).copy_(t);
}

// The elements of `laid_out` (a fresh dense output) in its memory order,
// the channel of each along `axis` (-1: per tensor), and the grid's range.
void set_grid(fake_quantize_params& p, const at::Tensor& laid_out, int64_t axis, int64_t quant_min,
              int64_t quant_max) {
  p.count = static_cast<unsigned int>(laid_out.numel());  // dispatch_per_element refuses more than 2**32 - 1
  p.channels = axis < 0 ? 1u : static_cast<unsigned int>(laid_out.size(axis));
  p.channel_stride = axis < 0 ? 1u : static_cast<unsigned int>(std::max<int64_t>(laid_out.stride(axis), 1));
  p.quant_min = static_cast<float>(quant_min);
  p.quant_max = static_cast<float>(quant_max);
}

// Outputs laid out as the CPU's (empty_like, memory format preserved), the
// kernel writing them in their memory order: x in that order too (self
// itself where its strides are theirs), and the channel axis's stride in it.
std::tuple<at::Tensor, at::Tensor> fake_quantize_into_new(const at::Tensor& self, QParams q, int64_t axis,
                                                          int64_t quant_min, int64_t quant_max) {
  static KernelCache with_mask("fake_quantize_cachemask");
  static KernelCache values_only("fake_quantize_values");
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Preserve);
  at::Tensor mask = q.with_mask ? at::empty_like(self, self.options().dtype(at::kBool), at::MemoryFormat::Preserve)
                                : at::Tensor();
  if (self.numel() == 0) {
    return {out, mask};
  }
  const at::Tensor x = in_memory_order_of(out, self);
  fake_quantize_params& p = q.params;
  set_grid(p, out, axis, quant_min, quant_max);
  // Unread buffers (qparams in params, no switch) are bound to one unread
  // 4-byte element, the size of theirs.
  const at::Tensor unread = q.scales.defined() && q.enabled.defined() ? at::Tensor()
                                                                      : at::empty({1}, out.options().dtype(at::kInt));
  const at::Tensor& scales = q.scales.defined() ? q.scales : unread;
  const at::Tensor& zero_points = q.zero_points.defined() ? q.zero_points : unread;
  const at::Tensor& enabled = q.enabled.defined() ? q.enabled : unread;
  const unsigned per_thread = elements_per_thread(self.element_size());
  if (q.with_mask) {
    dispatch_per_element(with_mask, out, {&out, &mask, &x, &scales, &zero_points, &enabled}, p, per_thread);
  } else {
    dispatch_per_element(values_only, out, {&out, &x, &scales, &zero_points, &enabled}, p, per_thread);
  }
  return {out, mask};
}

// One scale (float32) and zero point (int32, or float bits) on the device,
// the zero point added after the rounding.
QParams per_tensor_on_device(at::Tensor scale, at::Tensor zero_point) {
  QParams q;
  q.params.qparams_source = fake_quantize_qparams_in_buffers;
  q.params.rounding = fake_quantize_round_then_add;
  q.scales = std::move(scale);
  q.zero_points = std::move(zero_point);
  return q;
}

// A one-element tensor's value, read by the kernel: on self's device, in
// dtype (a float zero point truncates toward zero, as the CPU's toInt()).
at::Tensor device_item(const at::Tensor& t, const at::Tensor& self, c10::ScalarType dtype) {
  TORCH_CHECK(t.numel() == 1, "a Tensor with ", t.numel(), " elements cannot be converted to Scalar");
  return t.to(dtype).to(self.device()).reshape({1});
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> fake_quantize_per_tensor_affine_cachemask(const at::Tensor& self, double scale,
                                                                              int64_t zero_point, int64_t quant_min,
                                                                              int64_t quant_max) {
  check_device("fake_quantize_per_tensor_affine_cachemask", self);
  check_quant_range(quant_min, quant_max);
  TORCH_CHECK(zero_point >= quant_min && zero_point <= quant_max,
              "`zero_point` must be between `quant_min` and `quant_max`.");
  check_fake_quantize_input("fake_quantize_per_tensor_affine_cachemask",
                            "fake_quantize_tensor_cachemask_kernel_type_handling", self);
  QParams q;
  q.params.qparams_source = fake_quantize_qparams_in_params;
  q.params.rounding = fake_quantize_round_then_add;
  q.params.scale = static_cast<float>(scale);  // the CPU's kernel takes a float scale
  q.params.zero_point = static_cast<float>(zero_point);
  return fake_quantize_into_new(self, std::move(q), /*axis=*/-1, quant_min, quant_max);
}

std::tuple<at::Tensor, at::Tensor> _fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
    const at::Tensor& self, const at::Tensor& scale, const at::Tensor& zero_point,
    const at::Tensor& fake_quant_enabled, int64_t quant_min, int64_t quant_max) {
  const char* op = "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams";
  check_device(op, self);
  // The CPU checks only the range here: a zero point outside it is clamped.
  check_quant_range(quant_min, quant_max);
  check_fake_quantize_input(op, "fake_quantize_tensor_cachemask_kernel_type_handling", self);
  QParams q = per_tensor_on_device(device_item(scale, self, at::kFloat), device_item(zero_point, self, at::kInt));
  q.params.read_enabled = 1;
  q.enabled = device_item(fake_quant_enabled, self, at::kInt);
  return fake_quantize_into_new(self, std::move(q), /*axis=*/-1, quant_min, quant_max);
}

namespace {

// The per-channel zero point dtypes the CPU takes.
void check_per_channel_zero_point_dtype(c10::ScalarType dtype) {
  TORCH_CHECK(dtype == at::kInt || dtype == at::kFloat || dtype == at::kHalf,
              "Zero-point must be Int32, Float or Half, found ", dtype);
}

// fake_quantize_per_channel_affine_cachemask's checks, in the CPU's order.
// Integer zero points are checked against the range (the host waits once)
// where check_zero_point_range: the learnable op's, clamped into it, cannot
// fail that check, so it skips the wait.
void check_per_channel(const char* op, const at::Tensor& self, const at::Tensor& scale, const at::Tensor& zero_point,
                       int64_t axis, int64_t quant_min, int64_t quant_max, bool check_zero_point_range) {
  check_device(op, self);
  // The CPU accepts a bfloat16 scale here, then fails on it inside its
  // kernel; ours computes with it (in float).
  TORCH_CHECK(scale.scalar_type() == at::kFloat || scale.scalar_type() == at::kBFloat16,
              "Scale must be Float or BFloat16, found ", scale.scalar_type());
  check_per_channel_zero_point_dtype(zero_point.scalar_type());
  TORCH_CHECK(scale.dim() == 1, "scale should be a 1-D tensor");
  TORCH_CHECK(zero_point.dim() == 1, "zero point should be a 1-D tensor");
  TORCH_CHECK(scale.numel() == zero_point.numel(), "scale and zero-point need to have the same dimensions");
  TORCH_CHECK(scale.numel() == self.size(axis),  // size() raises the CPU's IndexError for a bad axis
              "dimensions of scale and zero-point are not consistent with input tensor");
  check_quant_range(quant_min, quant_max);
  check_devices(op, {&scale, &zero_point});
  if (check_zero_point_range && !at::isFloatingType(zero_point.scalar_type()) && zero_point.numel() > 0) {
    TORCH_CHECK(!zero_point.lt(quant_min).logical_or(zero_point.gt(quant_max)).any().item<bool>(),
                "`zero_point` must be between `quant_min` and `quant_max`.");
  }
  TORCH_CHECK(axis >= 0 && axis <= self.dim(), "`axis` must be between 0 and number of dimensions of input");
  check_fake_quantize_input(op, "fake_quantize_channel_cachemask_cpu_type_handling", self);
}

// Scales and zero points per channel on the device. The CPU rounds x /
// scale, then adds an integer zero point; a floating one joins before the
// rounding.
QParams per_channel_on_device(const at::Tensor& scale, const at::Tensor& zero_point) {
  const bool zero_point_is_float = at::isFloatingType(zero_point.scalar_type());
  QParams q;
  q.params.qparams_source = fake_quantize_qparams_in_buffers;
  q.params.rounding = zero_point_is_float ? fake_quantize_add_then_round : fake_quantize_round_then_add;
  q.params.zero_point_is_float = zero_point_is_float ? 1 : 0;
  q.scales = scale.to(at::kFloat).contiguous();
  q.zero_points = zero_point_is_float ? zero_point.to(at::kFloat).contiguous().view(at::kInt) : zero_point.contiguous();
  return q;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> fake_quantize_per_channel_affine_cachemask(const at::Tensor& self,
                                                                               const at::Tensor& scale,
                                                                               const at::Tensor& zero_point,
                                                                               int64_t axis, int64_t quant_min,
                                                                               int64_t quant_max) {
  check_per_channel("fake_quantize_per_channel_affine_cachemask", self, scale, zero_point, axis, quant_min, quant_max,
                    /*check_zero_point_range=*/true);
  return fake_quantize_into_new(self, per_channel_on_device(scale, zero_point), axis, quant_min, quant_max);
}

namespace {

// The CPU's check of a float buffer it reads through data_ptr<float>().
void check_float32(const at::Tensor& t) {
  TORCH_CHECK(t.scalar_type() == at::kFloat, "expected scalar type Float but found ", t.scalar_type());
}

// The observer's input per channel (per row: channels along ch_axis, each
// row the channel's elements), as the CPU forms it.
at::Tensor rows_by_channel(const at::Tensor& self, int64_t ch_axis) {
  if (self.dim() == 2) {
    return self;
  }
  std::vector<int64_t> order(self.dim());
  std::iota(order.begin(), order.end(), 0);
  order[ch_axis] = 0;
  order[0] = ch_axis;
  return self.permute(order).flatten(1);
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> _fused_moving_avg_obs_fq_helper(
    const at::Tensor& self, const at::Tensor& observer_on, const at::Tensor& fake_quant_on, at::Tensor& running_min,
    at::Tensor& running_max, at::Tensor& scale, at::Tensor& zero_point, double averaging_const, int64_t quant_min,
    int64_t quant_max, int64_t ch_axis, bool per_row_fake_quant, bool symmetric_quant) {
  static KernelCache kernels("fake_quantize_observe");
  const char* op = "_fused_moving_avg_obs_fq_helper";
  check_device(op, self);
  TORCH_CHECK(ch_axis < self.dim(), "Error in fused_moving_avg_obs_fake_quant_cpu: ch_axis must be < self.dim()");
  check_devices(op, {&running_min, &running_max, &scale, &zero_point});
  const at::Tensor observe = device_item(observer_on, self, at::kInt);
  // The CPU reads float32 input and statistics when it observes (and then
  // requires per-row observation along axis 0); these are checked whatever
  // the switch says, which the host does not read.
  // The CPU's aminmax lacks complex and the wide unsigned dtypes; the other
  // non-float32 inputs reach its float read.
  TORCH_CHECK_NOT_IMPLEMENTED(!at::isComplexType(self.scalar_type()) && !is_wide_unsigned(self.scalar_type()),
                              "\"aminmax\" not implemented for '", c10::toString(self.scalar_type()), "' on ",
                              self.device(), " (", op, ")");
  check_float32(self);
  check_float32(running_min);
  check_float32(running_max);
  at::Tensor observed = self;
  int64_t channels = 1;
  if (per_row_fake_quant) {
    observed = rows_by_channel(self, ch_axis);
    channels = self.size(ch_axis);
    if (running_min.numel() == 0) {
      running_min.resize_(channels).fill_(std::numeric_limits<float>::infinity());
      running_max.resize_(channels).fill_(-std::numeric_limits<float>::infinity());
      scale.resize_(channels);
      zero_point.resize_(channels);
    }
    TORCH_CHECK(ch_axis == 0, "Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only supported on axis == 0");
    TORCH_CHECK(running_min.numel() == channels && running_max.numel() == channels && scale.numel() == channels &&
                    zero_point.numel() == channels,
                "dimensions of scale and zero-point are not consistent with input tensor");
    check_per_channel_zero_point_dtype(zero_point.scalar_type());
  } else {
    // The CPU writes scale[0] and zero_point[0] (select's IndexErrors), then
    // reads each as one value.
    scale.select(0, 0);
    zero_point.select(0, 0);
    for (const at::Tensor* t : {&running_min, &running_max, &scale, &zero_point}) {
      TORCH_CHECK(t->numel() == 1, "a Tensor with ", t->numel(), " elements cannot be converted to Scalar");
    }
  }
  const at::Tensor fake_quant = device_item(fake_quant_on, self, at::kInt);
  fake_quantize_observe_params params{};
  params.channels = static_cast<unsigned int>(channels);
  params.averaging_const = static_cast<float>(averaging_const);
  params.quant_min = static_cast<int>(quant_min);
  params.quant_max = static_cast<int>(quant_max);
  params.symmetric = symmetric_quant ? 1 : 0;
  params.observe_input = self.numel() > 0 ? 1 : 0;
  at::Tensor current_min = running_min, current_max = running_max;  // bound, unread, where nothing is observed
  if (self.numel() > 0) {
    std::tie(current_min, current_max) = per_row_fake_quant ? at::aminmax(observed, 1) : at::aminmax(observed);
  } else if (observer_on.item().toInt() != 0) {
    // An empty input observed: the CPU's aminmax raises (the host waits for
    // the switch in this case only).
    per_row_fake_quant ? at::aminmax(observed, 1) : at::aminmax(observed);
  }
  // The kernel writes float32 scales and int32 zero points; others go
  // through stand-ins, copied back only where the switch turned fake
  // quantization on (read on the host then: a call with these dtypes waits).
  const bool standard_dtypes = scale.scalar_type() == at::kFloat && zero_point.scalar_type() == at::kInt;
  const ContiguousOutput running_min_target(running_min, ContiguousOutput::Contents::keep);
  const ContiguousOutput running_max_target(running_max, ContiguousOutput::Contents::keep);
  const ContiguousOutput scale_target(scale, at::kFloat, ContiguousOutput::Contents::keep);
  const ContiguousOutput zero_point_target(zero_point, at::kInt, ContiguousOutput::Contents::keep);
  dispatch_per_element(kernels, running_min_target.tensor,
                       {&running_min_target.tensor, &running_max_target.tensor, &scale_target.tensor,
                        &zero_point_target.tensor, &current_min, &current_max, &observe, &fake_quant},
                       params);
  running_min_target.copy_back();
  running_max_target.copy_back();
  if (standard_dtypes || fake_quant_on.item().toInt() != 0) {
    scale_target.copy_back();
    zero_point_target.copy_back();
  }
  // Then fake quantization with what the user's tensors now hold (where the
  // switch is off, x passes through with a mask all true: the CPU's clone
  // and ones).
  QParams q;
  q.params.qparams_source = fake_quantize_qparams_in_buffers;
  q.params.read_enabled = 1;
  q.enabled = fake_quant;
  q.scales = standard_dtypes ? scale_target.tensor : scale.to(at::kFloat).contiguous();
  q.zero_points = standard_dtypes ? zero_point_target.tensor : zero_point.to(at::kInt).contiguous();
  // Per row, the CPU's per-channel op: a floating zero point joins before the rounding.
  q.params.rounding = per_row_fake_quant && at::isFloatingType(zero_point.scalar_type())
                          ? fake_quantize_add_then_round
                          : fake_quantize_round_then_add;
  return fake_quantize_into_new(self, std::move(q), per_row_fake_quant ? ch_axis : -1, quant_min, quant_max);
}

// --- the learnable fake quantizers (LearnableFakeQuantize) --------------------

at::Tensor _fake_quantize_learnable_per_tensor_affine(const at::Tensor& self, const at::Tensor& scale,
                                                      const at::Tensor& zero_point, int64_t quant_min,
                                                      int64_t quant_max, double grad_factor) {
  const char* op = "_fake_quantize_learnable_per_tensor_affine";
  check_device(op, self);
  // The CPU reads scale[0] and zero_point[0] (select's IndexErrors), the zero
  // point rounded half to even and clamped into the range, in float.
  const at::Tensor scale_value = device_item(scale.select(0, 0), self, at::kFloat);
  const at::Tensor zero_point_value =
      device_item(zero_point.select(0, 0), self, at::kFloat).round().clamp(quant_min, quant_max);
  check_quant_range(quant_min, quant_max);
  check_fake_quantize_input(op, "fake_quantize_tensor_cachemask_kernel_type_handling", self);
  QParams q = per_tensor_on_device(scale_value, zero_point_value.view(at::kInt));
  q.params.zero_point_is_float = 1;
  q.with_mask = false;  // the learnable op returns the values alone
  return std::get<0>(fake_quantize_into_new(self, std::move(q), /*axis=*/-1, quant_min, quant_max));
}

at::Tensor _fake_quantize_learnable_per_channel_affine(const at::Tensor& self, const at::Tensor& scale,
                                                       const at::Tensor& zero_point, int64_t axis, int64_t quant_min,
                                                       int64_t quant_max, double grad_factor) {
  // The CPU's: the zero points rounded half to even, clamped, as int32, then
  // the per-channel op (its checks too, but for the range check of the zero
  // points, which clamped ones pass: no wait).
  const at::Tensor rounded = zero_point.round().clamp_(quant_min, quant_max).to(at::kInt);
  check_per_channel("_fake_quantize_learnable_per_channel_affine", self, scale, rounded, axis, quant_min, quant_max,
                    /*check_zero_point_range=*/false);
  return std::get<0>(fake_quantize_into_new(self, per_channel_on_device(scale, rounded), axis, quant_min, quant_max));
}

namespace {

using c10::ScalarType;

// The backwards' inputs as the CPU takes them: where X is bfloat16, all four
// converted to float, then float32 required of all four (in its words).
// The kernel reads bfloat16 X and dY itself (no converted copies): they
// stay bfloat16 here where both are, and `widened` records the conversion
// the CPU makes of them.
struct LearnableGradInputs {
  at::Tensor grad, x, scale, zero_point;
  bool widened;
};

LearnableGradInputs learnable_grad_inputs(const at::Tensor& dY, const at::Tensor& X, const at::Tensor& scale,
                                          const at::Tensor& zero_point) {
  const bool widen = X.scalar_type() == at::kBFloat16;
  auto in_float = [widen](const at::Tensor& t) { return widen ? t.to(at::kFloat) : t; };
  const bool read_as_bfloat16 = widen && dY.scalar_type() == at::kBFloat16;
  return {read_as_bfloat16 ? dY : in_float(dY), read_as_bfloat16 ? X : in_float(X), in_float(scale),
          in_float(zero_point), widen};
}

// A dtype as the CPU's check sees it (its converted tensor's).
struct SeenDtype {
  c10::ScalarType dtype;
  c10::ScalarType scalar_type() const { return dtype; }
};

// The CPU's message-less checks (their words are the condition's text).
void check_learnable_grad_dtypes(const LearnableGradInputs& in) {
  auto seen = [&in](const at::Tensor& t) { return SeenDtype{in.widened ? at::kFloat : t.scalar_type()}; };
  const SeenDtype dY_ = seen(in.grad), X_ = seen(in.x), scale_ = seen(in.scale), zero_point_ = seen(in.zero_point);
  TORCH_CHECK(dY_.scalar_type() == ScalarType::Float);
  TORCH_CHECK(X_.scalar_type() == ScalarType::Float);
  TORCH_CHECK(scale_.scalar_type() == ScalarType::Float);
  TORCH_CHECK(zero_point_.scalar_type() == ScalarType::Float);
}

// dX in X's layout (the CPU's empty_like), and each element's d(scale) and
// d(zero point) terms in the same memory order, for the caller to sum.
std::tuple<at::Tensor, at::Tensor, at::Tensor> learnable_grad_terms(const LearnableGradInputs& in, QParams q,
                                                                    int64_t axis, int64_t quant_min,
                                                                    int64_t quant_max, double grad_factor) {
  static KernelCache kernels("fake_quantize_learnable_grad");
  // float32 results, as the CPU's (for bfloat16 X too).
  at::Tensor grad_x = at::empty_like(in.x, in.x.options().dtype(at::kFloat), at::MemoryFormat::Preserve);
  at::Tensor grad_scale = at::empty_like(grad_x), grad_zero_point = at::empty_like(grad_x);
  const at::Tensor x = in_memory_order_of(grad_x, in.x), grad = in_memory_order_of(grad_x, in.grad);
  fake_quantize_params& p = q.params;
  set_grid(p, grad_x, axis, quant_min, quant_max);
  p.qparams_source = fake_quantize_qparams_in_buffers;
  p.rounding = fake_quantize_add_then_round;
  p.zero_point_is_float = 1;
  p.grad_factor = static_cast<float>(grad_factor);
  // The grid like x: the kernel's name carries the dtype it reads.
  dispatch_per_element(kernels, x, {&grad_x, &grad_scale, &grad_zero_point, &x, &grad, &q.scales, &q.zero_points},
                       p, elements_per_thread(x.element_size()));
  return {grad_x, grad_scale, grad_zero_point};
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> _fake_quantize_learnable_per_tensor_affine_backward(
    const at::Tensor& grad, const at::Tensor& self, const at::Tensor& scale, const at::Tensor& zero_point,
    int64_t quant_min, int64_t quant_max, double grad_factor) {
  const char* op = "_fake_quantize_learnable_per_tensor_affine_backward";
  check_device(op, self);
  check_devices(op, {&grad});
  const LearnableGradInputs in = learnable_grad_inputs(grad, self, scale, zero_point);
  // The CPU reads scale[0] and zero_point[0] first; this backward's zero
  // point is trunc(clamp(zero_point + 0.5)), not the forward's rounding.
  QParams q;
  q.scales = device_item(in.scale.select(0, 0), self, at::kFloat);
  const at::Tensor zero_point_value = device_item(in.zero_point.select(0, 0), self, at::kFloat)
                                          .add(0.5)
                                          .clamp(quant_min, quant_max)
                                          .trunc();
  q.zero_points = zero_point_value.view(at::kInt);
  check_learnable_grad_dtypes(in);
  TORCH_CHECK(in.x.numel() == in.grad.numel(), "`X` and `dY` are not the same size");
  TORCH_CHECK(quant_min <= 0 && quant_max >= 0,
              "`quant_min` should be less than or         equal to `quant_max`, and the quantization range should "
              "include 0.");
  if (in.x.numel() <= 0) {
    return {self, scale, zero_point};  // the CPU returns its arguments themselves
  }
  // Shapes of one element count that broadcast (1s added): the CPU's
  // iterator gives dX the broadcast shape.
  LearnableGradInputs shaped = in;
  if (in.x.sizes() != in.grad.sizes()) {
    const std::vector<int64_t> shape = at::infer_size(in.x.sizes(), in.grad.sizes());
    shaped.x = in.x.expand(shape);
    shaped.grad = in.grad.expand(shape);
  }
  auto [grad_x, grad_scale, grad_zero_point] =
      learnable_grad_terms(shaped, std::move(q), /*axis=*/-1, quant_min, quant_max, grad_factor);
  return {grad_x, grad_scale.sum().unsqueeze(0), grad_zero_point.sum().unsqueeze(0)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> _fake_quantize_learnable_per_channel_affine_backward(
    const at::Tensor& grad, const at::Tensor& self, const at::Tensor& scale, const at::Tensor& zero_point,
    int64_t axis, int64_t quant_min, int64_t quant_max, double grad_factor) {
  const char* op = "_fake_quantize_learnable_per_channel_affine_backward";
  check_device(op, self);
  check_devices(op, {&grad, &scale, &zero_point});
  // The CPU rounds and clamps the zero points first: its errors for dtypes
  // those lack come before its dtype checks.
  const c10::ScalarType zero_point_dtype = zero_point.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(zero_point_dtype != at::kBool && !at::isComplexType(zero_point_dtype) &&
                                  !is_wide_unsigned(zero_point_dtype),
                              "\"round\" not implemented for '", c10::toString(zero_point_dtype), "' on ",
                              zero_point.device(), " (", op, ")");
  const LearnableGradInputs in = learnable_grad_inputs(grad, self, scale, zero_point);
  check_learnable_grad_dtypes(in);
  TORCH_CHECK(in.x.sizes() == in.grad.sizes(), "`X` and `dY` are not the same size");
  TORCH_CHECK(quant_min <= 0 && quant_max >= 0, "Expecting `quant_min` <= 0 and `quant_max` >= 0");
  TORCH_CHECK(in.scale.dim() == 1, "scale should be a 1-D tensor");
  TORCH_CHECK(in.zero_point.dim() == 1, "zero point should be a 1-D tensor");
  TORCH_CHECK(in.scale.numel() == in.zero_point.numel(), "scale and zero-point need to have the same dimensions");
  TORCH_CHECK(in.scale.numel() == in.x.size(axis),  // size() raises the CPU's IndexError for a bad axis
              "dimensions of scale and zero-point are not consistent with input tensor");
  TORCH_CHECK(axis >= 0 && axis < in.x.dim(), "`axis` must be between 0 and number of dimensions of input");
  if (in.x.numel() <= 0) {
    return {self, scale, zero_point};  // the CPU returns its arguments themselves
  }
  QParams q;
  q.scales = in.scale.contiguous();
  q.zero_points = in.zero_point.round().clamp_(quant_min, quant_max).contiguous().view(at::kInt);
  auto [grad_x, grad_scale, grad_zero_point] =
      learnable_grad_terms(in, std::move(q), axis, quant_min, quant_max, grad_factor);
  // Summed over every dim but the axis (all of them for a 1-D input: the
  // CPU's sum over an empty dim list).
  std::vector<int64_t> others;
  for (int64_t d = 0; d < in.x.dim(); ++d) {
    if (d != axis) {
      others.push_back(d);
    }
  }
  return {grad_x, grad_scale.sum(others), grad_zero_point.sum(others)};
}

}  // namespace mps_ops
