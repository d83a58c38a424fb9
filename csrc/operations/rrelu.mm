// Host stubs of rrelu_with_noise (functional, in place, out=); kernel in
// csrc/kernels/rrelu.metal. Training draws four words from the given
// generator (or the device's default one; a tiny random_ on the device, so
// the host never waits), the key of the kernel's counter-based stream: a
// fixed seed reproduces and the generator advances. The CPU instead draws one
// double per non-positive element from its mt19937 stream, so a fixed seed
// gives other slopes here than on the CPU (as on CUDA); docs/ops.md says so.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_inputs.h"
#include "../runtime/op_checks.h"
#include "../runtime/per_element.h"

#include "../kernels/rrelu_params.h"
#include "../kernels/include/mps_ops/shape_limits.h"

#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>

namespace mps_ops {
namespace {

void rrelu_into(const at::Tensor& self, at::Tensor& noise, const at::Scalar& lower, const at::Scalar& upper,
                bool training, std::optional<at::Generator> generator, at::Tensor& out) {
  static KernelCache kernels("rrelu_with_noise");
  check_device("rrelu_with_noise", self);
  check_out_dtype_first(self.scalar_type(), out);
  check_dtype("rrelu_with_noise", self);
  TORCH_CHECK(self.sizes() == noise.sizes(), "noise tensor shape must match self tensor shape. Got self.shape = ",
              self.sizes(), " noise.shape = ", noise.sizes());
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"rrelu_with_noise\" not implemented for '",
                              c10::toString(self.scalar_type()), "' on ", self.device());
  TORCH_CHECK(!training || noise.scalar_type() == self.scalar_type(), "expected scalar type ",
              self.scalar_type(), " but found ", noise.scalar_type());
  if (training) {
    check_inplace("rrelu_with_noise", noise, {&self});
  } else {
    check_device("rrelu_with_noise", noise);
  }
  if (!out.is_same(self)) {  // the in-place form writes self
    check_elementwise_output("rrelu_with_noise", out, self.scalar_type(), self.sizes(), {&self},
                             OutputDtype::exact, {&self, &noise});
  } else {
    check_inplace("rrelu_with_noise_", self, {&noise});
  }
  if (self.numel() == 0) {
    return;
  }
  const at::Tensor x = self.contiguous();
  // Evaluation reads no noise (x stands in for it) and no key (left unset).
  const ContiguousOutput noise_target(training ? noise : x);
  const at::Tensor key = philox_key(self.options(), std::move(generator), training);
  const double low = lower.to<double>(), high = upper.to<double>();
  // The CPU's check, made where it draws (it raises only once some element
  // is non-positive; here whenever training, as a draw may come).
  TORCH_CHECK(!training || low <= high, "Expected from <= to to be true, but got false.");
  // The CPU's mean slope: (lower + upper) / 2 in double, then the kernel's float.
  const rrelu_params params{static_cast<float>((low + high) / 2.0), static_cast<float>(low),
                            static_cast<float>(high - low), training ? 1 : 0,
                            static_cast<unsigned int>(self.numel())};
  const ContiguousOutput target(out);
  // Up to elements_per_thread elements per thread (the kernel says why);
  // dispatch_per_element refuses more than 2**32 - 1, so count holds them.
  dispatch_per_element(kernels, target.tensor, {&target.tensor, &noise_target.tensor, &x, &key}, params,
                       elements_per_thread(self.element_size()));
  noise_target.copy_back();
  target.copy_back();
}

}  // namespace

at::Tensor& rrelu_with_noise_out(const at::Tensor& self, at::Tensor& noise, const at::Scalar& lower,
                                 const at::Scalar& upper, bool training, std::optional<at::Generator> generator,
                                 at::Tensor& out) {
  rrelu_into(self, noise, lower, upper, training, std::move(generator), out);
  return out;
}

at::Tensor rrelu_with_noise(const at::Tensor& self, at::Tensor& noise, const at::Scalar& lower,
                            const at::Scalar& upper, bool training, std::optional<at::Generator> generator) {
  at::Tensor out = at::empty(self.sizes(), self.options());
  rrelu_into(self, noise, lower, upper, training, std::move(generator), out);
  return out;
}

at::Tensor& rrelu_with_noise_(at::Tensor& self, at::Tensor& noise, const at::Scalar& lower, const at::Scalar& upper,
                              bool training, std::optional<at::Generator> generator) {
  rrelu_into(self, noise, lower, upper, training, std::move(generator), self);
  return self;
}

}  // namespace mps_ops
