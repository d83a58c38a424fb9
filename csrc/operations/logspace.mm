// Host stub of logspace.out (the functional and Tensor overloads are torch's
// composites over it). Kernel in csrc/kernels/logspace.metal. The host does in
// double what the CPU does in double (start and end converted to the output
// type first, the step between them, log2 of the base) and hands the kernel
// each as a (hi, lo) float pair.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/op_checks.h"
#include "../runtime/per_element.h"

#include "../kernels/logspace_params.h"

#include <ATen/Dispatch.h>

#include <cmath>

namespace mps_ops {
namespace {

void split(double value, float (&pair)[2]) {
  pair[0] = static_cast<float>(value);
  pair[1] = std::isfinite(pair[0]) ? static_cast<float>(value - static_cast<double>(pair[0])) : 0.0f;
}

}  // namespace

at::Tensor& logspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps, double base,
                         at::Tensor& out) {
  static KernelCache kernels("logspace");
  check_device("logspace", out);
  check_dtype("logspace", out);
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (out.numel() != steps) {
    out.resize_({steps});
  }
  double first = 0.0, last = 0.0, step = 0.0;
  // The CPU's dispatch, for the same conversions and the same errors (bool,
  // unsigned wider than 8 bits: NotImplementedError). As the CPU, start and
  // end are converted to the output type (checked: an overflow raises) only
  // from two steps on.
  AT_DISPATCH_ALL_TYPES_AND2(at::kBFloat16, at::kHalf, out.scalar_type(), "logspace_mps", [&] {
    if (steps == 1) {
      // The CPU fills the one value: fill_ of one element, whose conversion
      // is checked (an overflow raises) except into half and bfloat16.
      if constexpr (!std::is_same_v<scalar_t, at::Half> && !std::is_same_v<scalar_t, at::BFloat16>) {
        (void)at::Scalar(std::pow(base, start.to<double>())).to<scalar_t>();
      }
      return;
    }
    if (steps == 0) {
      return;
    }
    const scalar_t scalar_start = start.to<scalar_t>();
    const scalar_t scalar_end = end.to<scalar_t>();
    first = static_cast<double>(scalar_start);
    last = static_cast<double>(scalar_end);
    step = static_cast<double>(scalar_end - scalar_start) / static_cast<double>(steps - 1);
  });
  logspace_params params{};
  if (steps == 1) {
    first = start.to<double>();  // one step: the CPU fills pow(base, start) unconverted
    params.halfway = 1;
  } else {
    params.halfway = steps / 2;
  }
  split(first, params.start);
  split(last, params.end);
  split(step, params.step);
  split(base, params.base);
  split(std::log2(base), params.log2_base);
  params.steps = steps;
  const ContiguousOutput target(out);
  dispatch_per_element(kernels, target.tensor, {&target.tensor}, params);
  target.copy_back();
  return out;
}

}  // namespace mps_ops
