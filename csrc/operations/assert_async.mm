// Host stubs of _assert_async and _assert_async.msg: `fill` ops (torch 2.9
// to 2.12 have no MPS kernel for them: torch._assert_async, and the
// runtime asserts of exported and compiled programs, raised on a Mac).
// Kernel in csrc/kernels/assert_async.metal. The CPU's checks and messages;
// the value is compared on the GPU, and a zero raises through a KernelFlag:
// at the call by default, later with error checks deferred
// (error_checks.h), where the op is then as asynchronous as CUDA's.
#include "../runtime/error_checks.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_flag.h"
#include "../runtime/kernel_function.h"
#include "../runtime/kernel_inputs.h"
#include "../runtime/op_checks.h"

#include "../kernels/assert_async_params.h"


#include <string>

namespace mps_ops {

namespace {

// Raises `message` (RuntimeError) where self's one value is zero.
void assert_nonzero(const char* op, const at::Tensor& self, std::string message) {
  static KernelCache kernels("assert_nonzero");
  check_device(op, self);
  // The CPU's is_nonzero, first.
  TORCH_CHECK(self.numel() != 0, "Boolean value of Tensor with no values is ambiguous");
  TORCH_CHECK(self.numel() < 2, "Boolean value of Tensor with more than one value is ambiguous");
  assert_async_params params{1};
  // A complex value is zero where both parts are.
  const at::Tensor value = real_parts(self);
  params.parts = self.is_complex() ? 2 : 1;
  check_dtype(op, value);
  KernelFlag zero;
  KernelFunction function(kernels.get(Variant::dense, value.scalar_type(), value.scalar_type()));
  function.bind_operands(value).bind(params, zero);
  function.dispatch(Dim3{1, 1, 1});
  check_flag(op, std::move(zero),
             [message = std::move(message)](const KernelFlag& flag) { TORCH_CHECK(!flag.raised(), message); });
}

}  // namespace

void _assert_async(const at::Tensor& self) {
  assert_nonzero("_assert_async", self, "Expected Tensor with single nonzero value, but got zero");
}

void _assert_async_msg(const at::Tensor& self, c10::string_view assert_msg) {
  assert_nonzero("_assert_async.msg", self, assert_msg.empty() ? "Assertion is failed" : std::string(assert_msg));
}

}  // namespace mps_ops
