// Host stub of poisson: a `fill` op (torch 2.9 to 2.13 have no MPS kernel
// for it: torch.poisson and torch.distributions.Poisson's samples raised on
// a Mac). Kernel in csrc/kernels/poisson.metal. The key of the kernel's
// counter-based streams is four words drawn from the given generator (or
// the device's default one) by a tiny random_ on the device, as rrelu's:
// the host never waits for them, a fixed seed reproduces and the generator
// advances. The CPU draws doubles from its mt19937 stream instead, so a
// fixed seed gives other counts here than on the CPU (as on CUDA); the
// distribution is the same.
#include "../runtime/error_checks.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_flag.h"
#include "../runtime/kernel_function.h"
#include "../runtime/kernel_inputs.h"
#include "../runtime/op_checks.h"

#include "../kernels/include/mps_ops/no_params.h"

#include <ATen/ops/empty.h>

namespace mps_ops {

at::Tensor poisson(const at::Tensor& self, std::optional<at::Generator> generator) {
  static KernelCache kernels("poisson");
  constexpr const char* op = "poisson";
  check_device(op, self);
  check_dtype(op, self);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"poisson_cpu\" not implemented for '",
                              c10::toString(self.scalar_type()), "' on ", self.device());
  // The CPU's output: contiguous, whatever the rates' layout.
  at::Tensor out = at::empty(self.sizes(), self.options().memory_format(at::MemoryFormat::Contiguous));
  if (self.numel() == 0) {
    return out;
  }
  TORCH_CHECK(self.numel() <= UINT32_MAX, "mps_ops: poisson over more than 2**32 - 1 rates");
  const at::Tensor key = philox_key(self.options(), std::move(generator));
  const at::Tensor rates = self.contiguous();
  KernelFlag bad_rate;
  KernelFunction function(kernels.get(Variant::dense, self.scalar_type(), self.scalar_type()));
  function.bind_operands(out, rates, key).bind(no_params{}, bad_rate);
  function.dispatch(Dim3{static_cast<uint32_t>(self.numel()), 1, 1});
  check_flag(op, std::move(bad_rate), [](const KernelFlag& flag) {
    TORCH_CHECK(!flag.raised(), "invalid Poisson rate, expected rate to be non-negative");
  });
  return out;
}

}  // namespace mps_ops
