// Host stubs of the Gamma samplers: _standard_gamma (a `fill` for torch 2.9
// to 2.11) and _sample_dirichlet (2.9 to 2.12), through which
// torch.distributions' Gamma, Beta, Chi2, StudentT and Dirichlet sample.
// Kernels in csrc/kernels/gamma.metal, whose streams are keyed by
// philox_key: a fixed seed reproduces, the generator advances, and the
// draws differ from the CPU's mt19937 ones (as CUDA's do); the
// distributions are the same. Results are contiguous, as the CPU's.
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/kernel_inputs.h"
#include "../runtime/op_checks.h"

#include "../kernels/gamma_params.h"
#include "../kernels/include/mps_ops/no_params.h"

#include <ATen/ops/empty.h>

#include <algorithm>

namespace mps_ops {
namespace {

// The checks both samplers make, and their contiguous result.
at::Tensor gamma_sampler_output(const char* op, const char* cpu_name, const at::Tensor& alpha) {
  check_device(op, alpha);
  check_dtype(op, alpha);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(alpha.scalar_type()), "\"", cpu_name, "\" not implemented for '",
                              c10::toString(alpha.scalar_type()), "' on ", alpha.device());
  TORCH_CHECK(alpha.numel() <= UINT32_MAX, "mps_ops: ", op, " of more than 2**32 - 1 elements");
  return at::empty(alpha.sizes(), alpha.options().memory_format(at::MemoryFormat::Contiguous));
}

}  // namespace

at::Tensor _standard_gamma(const at::Tensor& self, std::optional<at::Generator> generator) {
  static KernelCache kernels("standard_gamma");
  at::Tensor out = gamma_sampler_output("_standard_gamma", "gamma_cpu", self);
  if (out.numel() == 0) {
    return out;
  }
  const at::Tensor key = philox_key(self.options(), std::move(generator));
  KernelFunction function(kernels.get(Variant::dense, self.scalar_type(), self.scalar_type()));
  function.bind_operands(out, self.contiguous(), key).bind(no_params{});
  function.dispatch(Dim3{static_cast<uint32_t>(out.numel()), 1, 1});
  return out;
}

at::Tensor _sample_dirichlet(const at::Tensor& self, std::optional<at::Generator> generator) {
  static KernelCache kernels("sample_dirichlet");
  at::Tensor out = gamma_sampler_output("_sample_dirichlet", "dirichlet", self);
  if (out.numel() == 0) {
    return out;
  }
  dirichlet_params p{};
  p.row_length = static_cast<unsigned int>(self.dim() == 0 ? 1 : self.size(-1));
  p.rows = static_cast<unsigned int>(self.numel() / p.row_length);
  p.row_lanes = 1;
  while (p.row_lanes < std::min(p.row_length, 32u)) {
    p.row_lanes *= 2;
  }
  const KernelHandle* kernel = kernels.get(Variant::dense, self.scalar_type(), self.scalar_type());
  const uint32_t width = power_of_two_group(256, 256, kernel);
  // Whole groups (and so whole SIMD groups: every lane of a row's shuffles
  // exists); lanes past the last row only join the shuffles.
  const int64_t threads = static_cast<int64_t>(p.rows) * p.row_lanes;
  const int64_t padded = (threads + width - 1) / width * width;
  TORCH_CHECK(padded <= UINT32_MAX, "mps_ops: _sample_dirichlet of more than ", UINT32_MAX / 32, " rows");
  // The draws' logs, between the kernel's two passes over a row.
  const at::Tensor log_draws = at::empty({self.numel()}, self.options().dtype(at::kFloat));
  const at::Tensor key = philox_key(self.options(), std::move(generator));
  KernelFunction function(kernel);
  function.bind_operands(out, self.contiguous(), log_draws, key).bind(p);
  function.dispatch(Dim3{static_cast<uint32_t>(padded), 1, 1}, Dim3{width, 1, 1});
  return out;
}

}  // namespace mps_ops
