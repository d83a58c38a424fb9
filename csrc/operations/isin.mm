// Host stubs of isin (Tensor_Tensor and Scalar_Tensor, functional and out=):
// `override` ops, whose stock MPS kernels run MPSGraph in every release,
// 2.15 included. One thread per element (csrc/kernels/isin.metal) scans a few
// test elements, or binary-searches them sorted (torch's own sort). Checks and
// messages are the CPU's (check_as_the_cpu asks it where ours refuse).
#include "../runtime/cpu_witness.h"
#include "../runtime/elementwise_stubs.h"
#include "../runtime/per_element.h"

#include "../kernels/isin_params.h"

#include <ATen/ScalarOps.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/sort.h>

#include <algorithm>
#include <vector>

namespace mps_ops {

namespace {

// More test elements than this are sorted and binary-searched: each thread
// of a scan reads them all, a search log2(n) of them.
constexpr int64_t scanned_tests = 32;
// Elements per dispatch: the kernel indexes them in 32 bits.
constexpr int64_t elements_per_dispatch = int64_t{1} << 30;

// Ours, in the CPU's order: its meta function's dtypes (no bool, no
// complex), devices, then promotion and the dtypes our kernels have.
void check_operands(const at::Tensor& elements, const at::Tensor& test_elements, const at::Tensor* out) {
  for (const at::Tensor* t : {&elements, &test_elements}) {
    const auto dtype = t->scalar_type();
    TORCH_CHECK(dtype != at::kBool && !c10::isComplexType(dtype),
                "Unsupported input type encountered for isin(): ", dtype);
  }
  check_devices("isin", {&elements, &test_elements, out});
  if (out != nullptr) {
    TORCH_CHECK(out->scalar_type() == at::kBool, "Expected out tensor to have dtype bool, but got ",
                out->scalar_type(), " instead");
  }
  const auto common = at::result_type(elements, test_elements);
  check_dtype("isin", elements);
  check_dtype("isin", test_elements);
  check_result_dtype("isin", common, elements);
  TORCH_CHECK_NOT_IMPLEMENTED(!is_wide_unsigned(common), "mps_ops: isin not implemented for '", common, "' on ",
                              elements.device());
}

// out (bool, contiguous, elements' shape) = isin(elements, test_elements).
void run(const at::Tensor& elements, const at::Tensor& test_elements, bool invert, const at::Tensor& out) {
  if (out.numel() == 0) {
    return;
  }
  if (test_elements.numel() == 0) {
    out.fill_(invert);
    return;
  }
  static KernelCache kernels("isin");
  const auto common = at::result_type(elements, test_elements);
  // (A Python number's 0-dim CPU tensor too: the kernel reads both from memory.)
  const at::Tensor flat = elements.to(out.device(), common).contiguous().view(-1);
  at::Tensor tests = test_elements.to(out.device(), common).reshape(-1);
  const bool sorted = tests.numel() > scanned_tests;
  tests = sorted ? std::get<0>(at::sort(tests)) : tests.contiguous();
  TORCH_CHECK(tests.numel() <= UINT32_MAX, "mps_ops: isin with more than 2**32 - 1 test elements");
  const at::Tensor flat_out = out.view(-1);
  for (int64_t start = 0; start < flat.numel(); start += elements_per_dispatch) {
    const int64_t count = std::min(elements_per_dispatch, flat.numel() - start);
    const at::Tensor piece = flat.narrow(0, start, count), piece_out = flat_out.narrow(0, start, count);
    const isin_params params{static_cast<unsigned>(count), static_cast<unsigned>(tests.numel()), sorted ? 1u : 0u,
                             invert ? 1u : 0u};
    dispatch_per_element(kernels, piece, {&piece_out, &piece, &tests}, params);
  }
}

at::Tensor& isin_into(const at::Tensor& elements, const at::Tensor& test_elements, bool invert, at::Tensor& out) {
  check_output("isin", out, at::kBool, elements.sizes(), {&elements, &test_elements});
  if (!out.is_contiguous()) {
    at::Tensor result = at::empty(elements.sizes(), out.options());
    run(elements, test_elements, invert, result);
    out.copy_(result);
    return out;
  }
  run(elements, test_elements, invert, out);
  return out;
}

// The device of the call: test_elements', or elements' where it is the
// device tensor (a 0-dim CPU operand is not).
c10::Device call_device(const at::Tensor& elements, const at::Tensor& test_elements) {
  return test_elements.dim() == 0 && test_elements.is_cpu() ? elements.device() : test_elements.device();
}

}  // namespace

at::Tensor isin_Tensor_Tensor(const at::Tensor& elements, const at::Tensor& test_elements, bool assume_unique,
                              bool invert) {
  check_as_the_cpu([&] { check_operands(elements, test_elements, nullptr); }, "isin", false, "Tensor_Tensor",
                   [&] { return std::vector<c10::IValue>{elements, test_elements, assume_unique, invert}; });
  at::Tensor out = at::empty(elements.sizes(), elements.options().dtype(at::kBool).device(
                                                   call_device(elements, test_elements)));
  run(elements, test_elements, invert, out);
  return out;
}

at::Tensor& isin_Tensor_Tensor_out(const at::Tensor& elements, const at::Tensor& test_elements, bool assume_unique,
                                   bool invert, at::Tensor& out) {
  check_as_the_cpu([&] { check_operands(elements, test_elements, &out); }, "isin", false, "Tensor_Tensor_out",
                   [&] { return std::vector<c10::IValue>{elements, test_elements, assume_unique, invert, out}; });
  return isin_into(elements, test_elements, invert, out);
}

// The element as the CPU takes it: a wrapped number, promoting as a Python
// number does; on the CPU (a 0-dim CPU value, which may be a double), moved
// to the device in the common dtype by run().
at::Tensor isin_Scalar_Tensor(const at::Scalar& element, const at::Tensor& test_elements, bool assume_unique,
                              bool invert) {
  return isin_Tensor_Tensor(at::native::wrapped_scalar_tensor(element), test_elements, assume_unique, invert);
}

at::Tensor& isin_Scalar_Tensor_out(const at::Scalar& element, const at::Tensor& test_elements, bool assume_unique,
                                   bool invert, at::Tensor& out) {
  return isin_Tensor_Tensor_out(at::native::wrapped_scalar_tensor(element), test_elements, assume_unique, invert,
                                out);
}

}  // namespace mps_ops
