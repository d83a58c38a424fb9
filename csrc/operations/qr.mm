// Host stubs of geqrf (+ out=) and linalg_qr (+ out=): the QR
// factorisation by Householder reflectors, LAPACK's layout and signs;
// kernel in csrc/kernels/geqrf.metal. linalg_qr forms Q by applying the
// reflectors to the identity's columns with our ormqr (csrc/operations/
// ormqr.mm, called directly: it serves every release). Checks, their order
// and messages are the CPU's. float32 only (the CPU's LAPACK also takes
// float64 and complex).
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/linalg_results.h"
#include "../runtime/op_checks.h"

#include "../kernels/geqrf_params.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/triu.h>

#include <algorithm>
#include <tuple>
#include <vector>

namespace mps_ops {

at::Tensor ormqr(const at::Tensor& self, const at::Tensor& input2, const at::Tensor& input3, bool left,
                 bool transpose);

namespace {

constexpr const char* geqrf_name = "torch.geqrf";
constexpr const char* qr_name = "linalg.qr";

// The factored matrices (column-major batches, R on and above the diagonal,
// the reflectors' vectors below) and the reflectors' taus.
std::tuple<at::Tensor, at::Tensor> factor(const at::Tensor& a) {
  static KernelCache kernels("geqrf");
  const int64_t m = a.size(-2);
  const int64_t n = a.size(-1);
  at::Tensor factored = batched_column_major_copy(a);
  at::Tensor tau = at::empty(batch_shape_with(matrix_batch(a), {std::min(m, n)}), a.options());
  const int64_t matrices = m == 0 || n == 0 ? 0 : a.numel() / (m * n);
  if (matrices == 0) {
    return {factored, tau};
  }
  const KernelHandle* handle = kernels.get(Variant::dense, at::kFloat, at::kFloat);
  const uint32_t threads = power_of_two_group(std::max(m, n), geqrf_max_threads, handle);
  TORCH_CHECK(matrices <= UINT32_MAX / threads, "mps_ops: geqrf of too many matrices");
  TORCH_CHECK(m * n <= INT32_MAX, "mps_ops: geqrf of matrices of 2**31 elements or more");
  geqrf_params params{};
  params.rows = static_cast<int>(m);
  params.columns = static_cast<int>(n);
  KernelFunction kernel(handle);
  kernel.bind_operands(factored, tau).bind(params);
  kernel.dispatch(Dim3{threads * static_cast<uint32_t>(matrices), 1, 1}, Dim3{threads, 1, 1});
  return {factored, tau};
}

void check_geqrf_input(const at::Tensor& self) {
  check_device(geqrf_name, self);
  TORCH_CHECK(self.dim() >= 2, geqrf_name, ": input must have at least 2 dimensions.");
}

enum class QrMode { reduced, complete, r_only };

QrMode qr_mode(c10::string_view mode) {
  if (mode == "reduced") return QrMode::reduced;
  if (mode == "complete") return QrMode::complete;
  TORCH_CHECK(mode == "r", "qr received unrecognized mode '", mode,
              "' but expected one of 'reduced' (default), 'r', or 'complete'");
  return QrMode::r_only;
}

void check_qr_input(const at::Tensor& a, c10::string_view mode) {
  check_device(qr_name, a);
  TORCH_CHECK(a.dim() >= 2, qr_name, ": The input tensor A must have at least 2 dimensions.");
  check_floating_or_complex(a, qr_name);
  qr_mode(mode);
}

// Q (m x k, or m x m where complete; empty for mode 'r') and R (k x n, or m x
// n where complete), column-major, as the CPU's.
std::tuple<at::Tensor, at::Tensor> qr(const at::Tensor& a, QrMode mode) {
  const int64_t m = a.size(-2);
  const int64_t n = a.size(-1);
  const int64_t k = std::min(m, n);
  const auto [factored, tau] = factor(a);
  const int64_t r_rows = mode == QrMode::complete ? m : k;
  const at::Tensor r = batched_column_major_copy(at::triu(factored.narrow(-2, 0, r_rows)));
  if (mode == QrMode::r_only) {
    return {at::empty({0}, a.options()), r};
  }
  const int64_t q_columns = mode == QrMode::complete ? m : k;
  const at::Tensor identity = at::eye(m, q_columns, a.options()).expand(batch_shape_with(matrix_batch(a), {m, q_columns}));
  // Both are batched column-major already (ormqr computes in such a copy).
  at::Tensor q = m == 0 || q_columns == 0 || k == 0
                     ? batched_column_major_copy(identity)
                     : mps_ops::ormqr(factored, tau, identity, /*left=*/true, /*transpose=*/false);
  return {q, r};
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> geqrf(const at::Tensor& self) {
  check_geqrf_input(self);
  check_float32_only("geqrf", self);
  return factor(self);
}

std::tuple<at::Tensor&, at::Tensor&> geqrf_a(const at::Tensor& self, at::Tensor& a, at::Tensor& tau) {
  check_geqrf_input(self);
  check_devices(geqrf_name, {&a, &tau});
  // torch's checkLinalgCompatibleDtype, before its dtype dispatch.
  check_linalg_castable(geqrf_name, self.scalar_type(), a, "a");
  check_linalg_castable(geqrf_name, self.scalar_type(), tau, "tau");
  check_float32_only("geqrf", self);
  const auto [factored, taus] = factor(self);
  check_output_taking_strides("geqrf", a, factored, {&self}, OutputDtype::castable, Restride::empty_only);
  check_output_taking_strides("geqrf", tau, taus, {&self, &a}, OutputDtype::castable, Restride::empty_only);
  a.copy_(factored);
  tau.copy_(taus);
  return {a, tau};
}

std::tuple<at::Tensor, at::Tensor> linalg_qr(const at::Tensor& A, c10::string_view mode) {
  check_qr_input(A, mode);
  check_float32_only("linalg_qr", A);
  return qr(A, qr_mode(mode));
}

std::tuple<at::Tensor&, at::Tensor&> linalg_qr_out(const at::Tensor& A, c10::string_view mode, at::Tensor& Q,
                                                   at::Tensor& R) {
  check_qr_input(A, mode);
  check_devices(qr_name, {&Q, &R});
  check_out_dtype_first(A.scalar_type(), Q);
  check_out_dtype_first(A.scalar_type(), R);
  check_float32_only("linalg_qr", A);
  const auto [q, r] = qr(A, qr_mode(mode));
  check_output_taking_strides("linalg_qr", Q, q, {&A}, OutputDtype::exact, Restride::resized);
  check_output_taking_strides("linalg_qr", R, r, {&A, &Q}, OutputDtype::exact, Restride::resized);
  Q.copy_(q);
  R.copy_(r);
  return {Q, R};
}

}  // namespace mps_ops
