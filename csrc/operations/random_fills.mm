// Host stubs of the in-place random fills cauchy_, log_normal_ and
// geometric_ (`fill` ops: torch 2.9 and 2.10 have no MPS kernel for them;
// their functional and out= forms reach these). Kernels in
// csrc/kernels/random_fills.metal, keyed by philox_key: a fixed seed
// reproduces, the generator advances, and the draws differ from the CPU's
// mt19937 ones (as CUDA's do). The CPU's checks, in its order: the
// parameters first (even for an empty tensor), then the dtype (cauchy_'s
// even for an empty tensor; the others' dispatch does not run for one).
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/kernel_inputs.h"
#include "../runtime/op_checks.h"

#include "../kernels/random_fills_params.h"

#include <cmath>

namespace mps_ops {
namespace {

at::Tensor& random_fill(KernelCache& kernels, at::Tensor& self, const random_fill_params& params,
                        std::optional<at::Generator> generator) {
  if (self.numel() == 0) {
    return self;
  }
  TORCH_CHECK(self.numel() <= UINT32_MAX, "mps_ops: ", kernels.op(), " of more than 2**32 - 1 elements");
  const at::Tensor key = philox_key(self.options(), std::move(generator));
  const ContiguousOutput target(self);
  random_fill_params sized = params;
  sized.numel = static_cast<unsigned int>(self.numel());
  KernelFunction function(kernels.get(Variant::dense, self.scalar_type(), self.scalar_type()));
  function.bind_operands(target.tensor, key).bind(sized);
  // A thread per random_fill_elements elements (the kernel says why).
  function.dispatch(Dim3{mps_ops::random_fill_threads(sized.numel), 1, 1});
  target.copy_back();
  return self;
}

}  // namespace

at::Tensor& cauchy_(at::Tensor& self, double median, double sigma, std::optional<at::Generator> generator) {
  static KernelCache kernels("cauchy");
  check_device("cauchy_", self);
  TORCH_CHECK(sigma > 0.0, "cauchy_ expects sigma > 0.0, but found sigma=", sigma);
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "Cauchy distribution is a continuous probability distribution. dtype must be a floating point "
              "but you specified ",
              self.dtype());
  check_dtype("cauchy_", self);
  return random_fill(kernels, self, {static_cast<float>(median), static_cast<float>(sigma), 0}, std::move(generator));
}

at::Tensor& log_normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> generator) {
  static KernelCache kernels("log_normal");
  check_device("log_normal_", self);
  TORCH_CHECK(std > 0.0, "log_normal_ expects std > 0.0, but found std=", std);
  if (self.numel() == 0) {  // the CPU's dtype dispatch does not run
    return self;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"log_normal_cpu\" not implemented for '",
                              c10::toString(self.scalar_type()), "' on ", self.device());
  check_dtype("log_normal_", self);
  return random_fill(kernels, self, {static_cast<float>(mean), static_cast<float>(std), 0}, std::move(generator));
}

at::Tensor& geometric_(at::Tensor& self, double p, std::optional<at::Generator> generator) {
  static KernelCache kernels("geometric");
  check_device("geometric_", self);
  TORCH_CHECK(0 < p && p < 1, "geometric_ expects p to be in (0, 1), but got p=", p);
  if (self.numel() == 0) {  // the CPU's dtype dispatch does not run
    return self;
  }
  const c10::ScalarType dtype = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(dtype != at::kBool && !at::isComplexType(dtype) && !is_wide_unsigned(dtype),
                              "\"geometric_cpu\" not implemented for '", c10::toString(dtype), "' on ",
                              self.device());
  check_dtype("geometric_", self);
  // 1 / log(1 - p), worked out in double: the kernel multiplies (a float
  // division per element took 0.90x torch's CUDA kernel down to 0.81x on the
  // H200), and a tiny p gives a huge or infinite factor, never a subnormal
  // log(1 - p) that a GPU could flush to 0.
  const double inverse_log_q = 1.0 / std::log1p(-p);
  return random_fill(kernels, self, {0.0f, static_cast<float>(inverse_log_q), 0}, std::move(generator));
}

}  // namespace mps_ops
