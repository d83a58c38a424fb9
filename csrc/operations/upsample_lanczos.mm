// Host stubs of _upsample_lanczos2d_aa (+ out=) and its backward (+
// grad_input=), and of the bilinear and bicubic antialiased resizes'
// backwards (fills for torch 2.9 to 2.13: training through
// F.interpolate(..., antialias=True) raised on a Mac; their forwards run on
// MPS); kernels in csrc/kernels/upsample_lanczos.metal. Each axis's
// windows and weights depend only on its sizes, so the host computes them,
// with the CPU's formulas in the CPU's types (float for float tensors, double
// then 16-bit fixed point for uint8), and binds them as small tables. Checks
// and messages are the CPU's.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"
#include "../runtime/per_element.h"

#include "../kernels/upsample_lanczos_params.h"

#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>
#include <c10/util/MathConstants.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace mps_ops {
namespace {

// The CPU's antialiasing filters (UpSampleKernel.cpp's aa_filter of its
// HelperInterpLinear, HelperInterpCubic and Lanczos helpers): at unit scale
// one output pixel's window spans `width` input pixels.
enum class AaFilter { lanczos3, linear, cubic };

int filter_width(AaFilter filter) {
  switch (filter) {
    case AaFilter::linear:
      return 2;
    case AaFilter::cubic:
      return 4;
    case AaFilter::lanczos3:
      break;
  }
  return 6;  // Lanczos-3: the filter spans [-3, 3)
}

// Input pixels per output pixel.
template <typename T>
T pixel_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners) {
    return out > 1 ? static_cast<T>(in - 1) / (out - 1) : static_cast<T>(0);
  }
  return (scale.has_value() && *scale > 0.) ? static_cast<T>(1.0 / *scale) : static_cast<T>(in) / out;
}

template <typename T>
T sinc(T x) {
  if (x == 0.0) {
    return 1.0;
  }
  x *= c10::pi<T>;
  return std::sin(x) / x;
}

// The CPU evaluates the second factor in double (x / 3.0 is a double).
template <typename T>
T lanczos3(T x) {
  x = std::abs(x);
  return x < 3.0 ? sinc(x) * sinc(x / 3.0) : 0.0;
}

// Keys' cubic convolution at a = -0.5, in T as the CPU's (the plain bicubic
// interpolation takes a = -0.75).
template <typename T>
T keys_cubic(T x) {
  const T a = -0.5;
  x = std::abs(x);
  if (x < 1.0) {
    return ((a + 2) * x - (a + 3)) * x * x + 1;
  }
  if (x < 2.0) {
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  }
  return 0.0;
}

template <typename T>
T filter_weight(AaFilter filter, T x) {
  switch (filter) {
    case AaFilter::linear:
      x = std::abs(x);
      return x < 1.0 ? 1.0 - x : 0.0;
    case AaFilter::cubic:
      return keys_cubic(x);
    case AaFilter::lanczos3:
      break;
  }
  return lanczos3(x);
}

// One axis: per output index its window (first input index, length) and
// `taps` normalised weights.
template <typename T>
struct AxisPlan {
  int64_t taps = 0;
  std::vector<int64_t> table;  // start[out], count[out]
  std::vector<T> weights;
  T max_weight = 0;
};

template <typename T>
AxisPlan<T> plan_axis(AaFilter filter, int64_t in, int64_t out, bool align_corners, std::optional<double> scale_arg) {
  const T scale = pixel_scale<T>(in, out, align_corners, scale_arg);
  const int width = filter_width(filter);
  const T support = (scale >= 1.0) ? (width * 0.5) * scale : width * 0.5;
  AxisPlan<T> plan;
  plan.taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  plan.table.assign(2 * out, 0);
  plan.weights.assign(out * plan.taps, 0);
  for (int64_t i = 0; i < out; ++i) {
    const T center = scale * (i + 0.5);
    const T invscale = (scale >= 1.0) ? 1.0 / scale : 1.0;
    const int64_t first = std::max(static_cast<int64_t>(center - support + 0.5), static_cast<int64_t>(0));
    const int64_t count = std::clamp<int64_t>(
        std::min(static_cast<int64_t>(center + support + 0.5), in) - first, 0, plan.taps);
    T* w = plan.weights.data() + i * plan.taps;
    T total = 0;
    for (int64_t j = 0; j < count; ++j) {
      w[j] = filter_weight<T>(filter, (j + first - center + 0.5) * invscale);
      total += w[j];
    }
    if (total != 0.0) {
      for (int64_t j = 0; j < count; ++j) {
        w[j] /= total;
        plan.max_weight = std::max(plan.max_weight, w[j]);
      }
    }
    plan.table[i] = first;
    plan.table[out + i] = count;
  }
  return plan;
}

// The backward's view of an axis: per input index the output indices whose
// windows cover it, which are consecutive (windows start and end in
// increasing order), as first[in], count[in], and their weights for it in
// increasing output order, `stride` per input index. The kernel then reads
// an element's weights in a row instead of searching every covering window
// for its place.
struct CoverPlan {
  std::vector<int64_t> table;  // first[in], count[in]
  std::vector<float> weights;  // in x stride
  int64_t stride = 1;
};

CoverPlan cover_plan(const AxisPlan<float>& plan, int64_t in, int64_t out) {
  CoverPlan cover;
  cover.table.assign(2 * in, 0);
  for (int64_t i = 0; i < out; ++i) {
    for (int64_t k = plan.table[i]; k < plan.table[i] + plan.table[out + i]; ++k) {
      if (cover.table[in + k]++ == 0) {
        cover.table[k] = i;
      }
      cover.stride = std::max(cover.stride, cover.table[in + k]);
    }
  }
  cover.weights.assign(in * cover.stride, 0.0f);
  for (int64_t i = 0; i < out; ++i) {
    for (int64_t k = plan.table[i]; k < plan.table[i] + plan.table[out + i]; ++k) {
      cover.weights[k * cover.stride + (i - cover.table[k])] = plan.weights[i * plan.taps + (k - plan.table[i])];
    }
  }
  return cover;
}

// An axis's tables on the device: windows, weights (float, or int16 fixed
// point widened to int32 for uint8) and the fixed point's fraction bits.
struct AxisTables {
  at::Tensor table;
  at::Tensor weights;
  int taps = 0;
  int precision = 0;
};

AxisTables axis_tables(AaFilter filter, int64_t in, int64_t out, bool align_corners, std::optional<double> scale,
                       c10::ScalarType dtype, const at::Device& device) {
  AxisTables tables;
  const auto to_device = [&](at::Tensor host) { return host.to(device); };
  if (dtype == at::kByte) {
    const AxisPlan<double> plan = plan_axis<double>(filter, in, out, align_corners, scale);
    int precision = 0;
    for (; precision < 22; ++precision) {
      const int next = static_cast<int>(0.5 + plan.max_weight * (1 << (precision + 1)));
      if (next >= (1 << 15)) {
        break;
      }
    }
    std::vector<int32_t> fixed(plan.weights.size());
    for (size_t k = 0; k < fixed.size(); ++k) {
      const double v = plan.weights[k] * (1 << precision);
      fixed[k] = static_cast<int16_t>(v < 0 ? static_cast<int>(-0.5 + v) : static_cast<int>(0.5 + v));
    }
    tables = {to_device(at::tensor(plan.table)), to_device(at::tensor(fixed)), static_cast<int>(plan.taps),
              precision};
  } else {
    const AxisPlan<float> plan = plan_axis<float>(filter, in, out, align_corners, scale);
    tables = {to_device(at::tensor(plan.table)), to_device(at::tensor(plan.weights)), static_cast<int>(plan.taps), 0};
  }
  return tables;
}

void check_sizes(at::IntArrayRef input_size, at::IntArrayRef output_size) {
  TORCH_CHECK(output_size.size() == 2, "It is expected output_size equals to 2, but got size ", output_size.size());
  TORCH_CHECK(input_size.size() == 4, "It is expected input_size equals to 4, but got size ", input_size.size());
  TORCH_CHECK(input_size[2] > 0 && input_size[3] > 0 && output_size[0] > 0 && output_size[1] > 0,
              "Input and output sizes should be greater than 0, but got input (H: ", input_size[2],
              ", W: ", input_size[3], ") output (H: ", output_size[0], ", W: ", output_size[1], ")");
}

// One pass over `axis` of in (N, C, H, W) into out, whose shape differs
// from in's only there.
void resample_axis(const at::Tensor& in, at::Tensor& out, int axis, bool align_corners,
                   std::optional<double> scale) {
  static KernelCache kernels("upsample_lanczos");
  const AxisTables tables =
      axis_tables(AaFilter::lanczos3, in.size(axis), out.size(axis), align_corners, scale, in.scalar_type(),
                  in.device());
  lanczos_pass_params params{};
  for (int d = 0; d < 4; ++d) {
    params.sizes[d] = out.size(d);
    params.in_strides[d] = in.stride(d);
    params.out_strides[d] = out.stride(d);
  }
  params.axis = axis;
  params.taps = tables.taps;
  params.precision = tables.precision;
  dispatch_per_element(kernels, out, {&out, &in, &tables.table, &tables.weights}, params);
}

// out: the caller's (out=; resized if needed, then in the input's suggested
// memory format) or null for a fresh one in that format, as the CPU
// allocates it.
at::Tensor lanczos_forward(const at::Tensor& input, c10::SymIntArrayRef output_size_, bool align_corners,
                           std::optional<double> scales_h, std::optional<double> scales_w, at::Tensor* out_arg) {
  const at::IntArrayRef output_size = C10_AS_INTARRAYREF_SLOW(output_size_);
  check_device("_upsample_lanczos2d_aa", input);
  if (out_arg != nullptr) check_out_dtype_first(input.scalar_type(), *out_arg);
  check_dtype("_upsample_lanczos2d_aa", input);
  check_sizes(input.sizes(), output_size);
  TORCH_CHECK(input.numel() != 0 || input.size(1) * input.size(2) * input.size(3) != 0,
              "Non-empty 4D data tensor expected but got a tensor with sizes ", input.sizes());
  const std::vector<int64_t> shape{input.size(0), input.size(1), output_size[0], output_size[1]};
  at::Tensor out;
  if (out_arg != nullptr) {
    out = *out_arg;
    check_structured_output("_upsample_lanczos2d_aa", out, input.scalar_type(), shape, {&input}, input);
  } else {
    out = at::empty(shape, input.options().memory_format(input.suggest_memory_format()));
  }
  if (input.sizes() == out.sizes()) {
    out.copy_(input);  // the CPU copies before it looks at the dtype, too
    return out;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(input.scalar_type() == at::kFloat || input.scalar_type() == at::kByte,
                              "\"_upsample_lanczos2d_aa\" not implemented for '",
                              c10::toString(input.scalar_type()), "' on ", input.device());
  if (out.numel() == 0) {
    return out;
  }
  // Width first, then height, as the CPU does; an unchanged axis is no pass.
  const bool resize_w = input.size(3) != output_size[1];
  const bool resize_h = input.size(2) != output_size[0];
  at::Tensor between = input;
  if (resize_w) {
    at::Tensor target =
        resize_h ? at::empty({shape[0], shape[1], input.size(2), shape[3]}, input.options()) : out;
    resample_axis(input, target, 3, align_corners, scales_w);
    between = target;
  }
  if (resize_h) {
    resample_axis(between, out, 2, align_corners, scales_h);
  }
  return out;
}

// One antialiased resize's backward: its filter, the op's name and its CPU
// kernel's (in the dtype dispatch's message).
struct AaBackward {
  AaFilter filter;
  const char* op;
  const char* cpu_name;
};
constexpr AaBackward lanczos_backward{AaFilter::lanczos3, "_upsample_lanczos2d_aa_backward",
                                      "upsample_lanczos2d_aa_backward"};
constexpr AaBackward bilinear_backward{AaFilter::linear, "_upsample_bilinear2d_aa_backward",
                                       "upsample_bilinear2d_aa_backward_cpu"};
constexpr AaBackward bicubic_backward{AaFilter::cubic, "_upsample_bicubic2d_aa_backward",
                                      "upsample_bicubic2d_aa_backward_cpu"};

// grad_input = the transposed resize of grad_output: per grad_input element
// the output cells whose windows cover it, in the CPU's order.
at::Tensor& aa_backward_out(const AaBackward& which, const at::Tensor& grad_output, c10::SymIntArrayRef output_size_,
                            c10::SymIntArrayRef input_size_, bool align_corners, std::optional<double> scales_h,
                            std::optional<double> scales_w, at::Tensor& grad_input) {
  static KernelCache kernels("upsample_aa_backward");
  const at::IntArrayRef output_size = C10_AS_INTARRAYREF_SLOW(output_size_);
  const at::IntArrayRef input_size = C10_AS_INTARRAYREF_SLOW(input_size_);
  check_device(which.op, grad_output);
  check_out_dtype_first(grad_output.scalar_type(), grad_input);
  check_dtype(which.op, grad_output);
  check_sizes(input_size, output_size);
  TORCH_CHECK(grad_output.dim() == 4, "Expected grad_output to be a tensor of dimension 4 but got: dimension ",
              grad_output.dim());
  const int64_t full_output_size[4] = {input_size[0], input_size[1], output_size[0], output_size[1]};
  for (int i = 0; i < 4; ++i) {
    TORCH_CHECK(grad_output.size(i) == full_output_size[i],
                "Expected grad_output to have the same shape as output;", " output.size(", i, ") = ",
                full_output_size[i], " but got grad_output.size(", i, ") = ", grad_output.size(i));
  }
  TORCH_CHECK_NOT_IMPLEMENTED(grad_output.scalar_type() == at::kFloat, "\"", which.cpu_name,
                              "\" not implemented for '", c10::toString(grad_output.scalar_type()), "' on ",
                              grad_output.device());
  check_output(which.op, grad_input, grad_output.scalar_type(), input_size, {&grad_output});
  if (grad_input.numel() == 0) {
    return grad_input;
  }
  TORCH_CHECK(grad_input.numel() <= UINT32_MAX, "mps_ops: ", which.op, " over more than 2**32 - 1 elements");
  struct CoverTables {
    at::Tensor table;
    at::Tensor weights;
    int stride;
  };
  const auto cover_tables = [&](int64_t in, int64_t out, std::optional<double> scale) {
    const CoverPlan cover = cover_plan(plan_axis<float>(which.filter, in, out, align_corners, scale), in, out);
    TORCH_CHECK(cover.stride <= INT32_MAX, "mps_ops: ", which.op, " with an input index covered by more than ",
                "2**31 - 1 outputs");
    return CoverTables{at::tensor(cover.table).to(grad_output.device()),
                       at::tensor(cover.weights).to(grad_output.device()), static_cast<int>(cover.stride)};
  };
  const CoverTables rows = cover_tables(input_size[2], output_size[0], scales_h);
  const CoverTables columns = cover_tables(input_size[3], output_size[1], scales_w);
  lanczos_backward_params params{};
  params.height = input_size[2];
  params.width = input_size[3];
  for (int d = 0; d < 4; ++d) {
    params.grad_output_strides[d] = grad_output.stride(d);
  }
  params.rows_stride = rows.stride;
  params.columns_stride = columns.stride;
  params.by_width = make_fast_divisor(static_cast<unsigned>(input_size[3]));
  params.by_height = make_fast_divisor(static_cast<unsigned>(input_size[2]));
  params.by_channels = make_fast_divisor(static_cast<unsigned>(input_size[1]));
  params.planes = static_cast<unsigned>(input_size[0] * input_size[1]);
  const int64_t plane_blocks = (input_size[0] * input_size[1] + aa_planes_per_thread - 1) / aa_planes_per_thread;
  const ContiguousOutput target(grad_input);
  KernelFunction function(kernels.get(Variant::dense, at::kFloat, at::kFloat));
  function.bind_operand_list(
      {&target.tensor, &grad_output, &rows.table, &rows.weights, &columns.table, &columns.weights});
  function.bind(params);
  function.dispatch(Dim3{static_cast<uint32_t>(plane_blocks * input_size[2] * input_size[3]), 1, 1});
  target.copy_back();
  return grad_input;
}

at::Tensor aa_backward(const AaBackward& which, const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                       c10::SymIntArrayRef input_size, bool align_corners, std::optional<double> scales_h,
                       std::optional<double> scales_w) {
  at::Tensor grad_input = at::empty({0}, grad_output.options());
  return aa_backward_out(which, grad_output, output_size, input_size, align_corners, scales_h, scales_w, grad_input);
}

}  // namespace

at::Tensor& upsample_lanczos2d_aa_out(const at::Tensor& input, c10::SymIntArrayRef output_size, bool align_corners,
                                      std::optional<double> scales_h, std::optional<double> scales_w,
                                      at::Tensor& out) {
  lanczos_forward(input, output_size, align_corners, scales_h, scales_w, &out);
  return out;
}

at::Tensor upsample_lanczos2d_aa(const at::Tensor& input, c10::SymIntArrayRef output_size, bool align_corners,
                                 std::optional<double> scales_h, std::optional<double> scales_w) {
  return lanczos_forward(input, output_size, align_corners, scales_h, scales_w, nullptr);
}

at::Tensor& upsample_lanczos2d_aa_backward_out(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                                               c10::SymIntArrayRef input_size, bool align_corners,
                                               std::optional<double> scales_h, std::optional<double> scales_w,
                                               at::Tensor& grad_input) {
  return aa_backward_out(lanczos_backward, grad_output, output_size, input_size, align_corners, scales_h, scales_w,
                         grad_input);
}

at::Tensor upsample_lanczos2d_aa_backward(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                                          c10::SymIntArrayRef input_size, bool align_corners,
                                          std::optional<double> scales_h, std::optional<double> scales_w) {
  return aa_backward(lanczos_backward, grad_output, output_size, input_size, align_corners, scales_h, scales_w);
}

at::Tensor& _upsample_bilinear2d_aa_backward_grad_input(const at::Tensor& grad_output,
                                                        c10::SymIntArrayRef output_size,
                                                        c10::SymIntArrayRef input_size, bool align_corners,
                                                        std::optional<double> scales_h,
                                                        std::optional<double> scales_w, at::Tensor& grad_input) {
  return aa_backward_out(bilinear_backward, grad_output, output_size, input_size, align_corners, scales_h, scales_w,
                         grad_input);
}

at::Tensor _upsample_bilinear2d_aa_backward(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                                            c10::SymIntArrayRef input_size, bool align_corners,
                                            std::optional<double> scales_h, std::optional<double> scales_w) {
  return aa_backward(bilinear_backward, grad_output, output_size, input_size, align_corners, scales_h, scales_w);
}

at::Tensor& _upsample_bicubic2d_aa_backward_grad_input(const at::Tensor& grad_output,
                                                       c10::SymIntArrayRef output_size,
                                                       c10::SymIntArrayRef input_size, bool align_corners,
                                                       std::optional<double> scales_h,
                                                       std::optional<double> scales_w, at::Tensor& grad_input) {
  return aa_backward_out(bicubic_backward, grad_output, output_size, input_size, align_corners, scales_h, scales_w,
                         grad_input);
}

at::Tensor _upsample_bicubic2d_aa_backward(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                                           c10::SymIntArrayRef input_size, bool align_corners,
                                           std::optional<double> scales_h, std::optional<double> scales_w) {
  return aa_backward(bicubic_backward, grad_output, output_size, input_size, align_corners, scales_h, scales_w);
}

}  // namespace mps_ops
