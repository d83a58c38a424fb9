// Host stubs of linalg_eig and _linalg_eigvals / linalg_eigvals.out: the
// eigenvalues (and right eigenvectors) of general real matrices, complex64
// as on the CPU; kernel in csrc/kernels/eig.metal. Checks, their order and
// messages are the CPU's. float32 only (the CPU's LAPACK also takes
// float64 and complex).
//
// The kernel writes (re, im) float pairs, which torch's complex64 storage
// is on every device (view_as_complex is a view): eigenvalues contiguous,
// eigenvectors column-major (column k the vector of eigenvalue k), as
// LAPACK's geev returns them.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/linalg_results.h"
#include "../runtime/op_checks.h"

#include "../kernels/eig_params.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/view_as_complex.h>

#include <algorithm>
#include <cstdlib>
#include <tuple>

namespace mps_ops {

namespace {

constexpr const char* eig_name = "torch.linalg.eig";
constexpr const char* eigvals_name = "torch.linalg.eigvals";

// torch's toComplexType, which the CPU calls first: integers and bool have
// no complex type.
void check_has_complex_type(const at::Tensor& a) {
  const auto dtype = a.scalar_type();
  TORCH_CHECK(at::isFloatingType(dtype) || at::isComplexType(dtype), "Unknown Complex ScalarType for ", dtype);
}

// linalg.eig refuses NaN and infinities before anything else (LAPACK's geev
// may not return on them). One read back, as on the CPU.
void check_finite(const at::Tensor& a) {
  TORCH_CHECK(at::isfinite(a).all().item<bool>(), eig_name, ": input tensor should not contain infs or NaNs.");
}

// The largest n taken: the work is O(n**3) on one threadgroup, 5.6 s for
// n = 1024 on an H200 (benchmarks/bench_eig.py); past it a call would run
// for minutes, which a clear error (and the CPU) serves better.
constexpr int64_t largest_n = 1024;

// QR sweeps allowed between deflations: LAPACK's lahqr budget, or
// MPS_OPS_EIG_ITERATIONS where set (the tests' way to reach the CPU's
// convergence error, which no matrix reaches on purpose).
int iteration_limit(int64_t n) {
  if (const char* forced = std::getenv("MPS_OPS_EIG_ITERATIONS")) {
    return std::atoi(forced);
  }
  return static_cast<int>(30 * std::max<int64_t>(10, n));
}

// Eigenvalues, and eigenvectors where wanted (else undefined), computed into
// fresh tensors. A matrix holding NaN or an infinity gets NaN eigenvalues
// (linalg.eig refused it before).
std::tuple<at::Tensor, at::Tensor> compute(const at::Tensor& self, bool want_vectors, const char* name) {
  static KernelCache kernels("eig");
  const int64_t n = self.size(-1);
  const auto batch = matrix_batch(self);
  const auto floats = self.options().dtype(at::kFloat);
  at::Tensor value_pairs = at::empty(batch_shape_with(batch, {n, 2}), floats);
  at::Tensor vector_pairs = want_vectors ? at::empty(batch_shape_with(batch, {n, n, 2}), floats) : at::Tensor();
  const int64_t matrices = n == 0 ? 0 : value_pairs.numel() / (2 * n);
  if (matrices > 0) {
    TORCH_CHECK_NOT_IMPLEMENTED(n <= largest_n, "mps_ops: ", name, " of ", n, " x ", n,
                                " matrices: mps_ops takes at most ", largest_n, " x ", largest_n,
                                " (one threadgroup per matrix; larger ones would run for minutes). For now, "
                                "compute on the CPU: torch.linalg.eig(A.cpu())");
    const KernelHandle* handle = kernels.get(Variant::dense, at::kFloat, at::kFloat);
    const uint32_t threads = power_of_two_group(n, eig_max_threads, handle);
    TORCH_CHECK(matrices <= UINT32_MAX / threads, "mps_ops: ", name, " of too many matrices");
    // The kernel's workspace: A's copy, then its Schur form and vectors.
    at::Tensor workspace = batched_column_major_copy(self);
    at::Tensor schur_vectors = at::empty(want_vectors ? std::vector<int64_t>{matrices, n, n} : std::vector<int64_t>{1}, floats);
    at::Tensor balancing = at::empty({matrices, n}, floats);
    at::Tensor info = pending_kernel_codes(matrices, self);
    at::Tensor vectors_written = want_vectors ? vector_pairs : at::empty({1}, floats);
    eig_params params{};
    params.n = static_cast<int>(n);
    params.want_vectors = want_vectors ? 1 : 0;
    params.iteration_limit = iteration_limit(n);
    KernelFunction kernel(handle);
    kernel.bind_operands(workspace, schur_vectors, balancing, value_pairs, vectors_written, info).bind(params);
    kernel.dispatch(Dim3{threads * static_cast<uint32_t>(matrices), 1, 1}, Dim3{threads, 1, 1});
    // The CPU's check after LAPACK's: a QR iteration that ran out of sweeps.
    check_converged(read_kernel_codes(info, name), name, self.dim() > 2, "eigenvalues");
  }
  const at::Tensor values = at::view_as_complex(value_pairs);
  const at::Tensor vectors = want_vectors ? at::view_as_complex(vector_pairs).mT() : at::Tensor();
  return {values, vectors};
}

void check_eig_input(const at::Tensor& self) {
  check_device(eig_name, self);
  check_has_complex_type(self);
  check_finite(self);
  check_square_matrices(self, "linalg.eig");
}

void check_eigvals_input(const at::Tensor& self) {
  check_device(eigvals_name, self);
  check_has_complex_type(self);
  check_square_matrices(self, "linalg.eigvals");
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> linalg_eig(const at::Tensor& self) {
  check_eig_input(self);
  check_float32_only("linalg_eig", self);
  return compute(self, /*want_vectors=*/true, eig_name);
}

std::tuple<at::Tensor&, at::Tensor&> linalg_eig_out(const at::Tensor& self, at::Tensor& eigenvalues,
                                                    at::Tensor& eigenvectors) {
  check_eig_input(self);
  check_devices(eig_name, {&eigenvalues, &eigenvectors});
  check_linalg_castable(eig_name, at::kComplexFloat, eigenvalues, "eigenvalues");
  check_linalg_castable(eig_name, at::kComplexFloat, eigenvectors, "eigenvectors");
  check_float32_only("linalg_eig", self);
  const auto [values, vectors] = compute(self, /*want_vectors=*/true, eig_name);
  check_output("linalg_eig", eigenvalues, at::kComplexFloat, values.sizes(), {&self}, OutputDtype::castable);
  // An empty complex64 out takes LAPACK's column-major strides, as the CPU
  // computes into it; any other is resized contiguous and copied into.
  const bool empty_before = eigenvectors.numel() == 0;
  const std::initializer_list<const at::Tensor*> read = {&self, &eigenvalues};
  if (check_output("linalg_eig", eigenvectors, at::kComplexFloat, vectors.sizes(), read, OutputDtype::castable) &&
      empty_before) {
    eigenvectors.as_strided_(vectors.sizes(), vectors.strides());
    check_no_aliasing(eigenvectors, read);  // restrided, it covers its memory in another order
  }
  eigenvalues.copy_(values);
  eigenvectors.copy_(vectors);
  return {eigenvalues, eigenvectors};
}

at::Tensor _linalg_eigvals(const at::Tensor& self) {
  check_eigvals_input(self);
  check_float32_only("_linalg_eigvals", self);
  return std::get<0>(compute(self, /*want_vectors=*/false, eigvals_name));
}

at::Tensor& linalg_eigvals_out(const at::Tensor& self, at::Tensor& out) {
  check_eigvals_input(self);
  check_devices(eigvals_name, {&out});
  check_linalg_castable(eigvals_name, at::kComplexFloat, out, "eigenvalues");
  check_float32_only("linalg_eigvals", self);
  const at::Tensor values = std::get<0>(compute(self, /*want_vectors=*/false, eigvals_name));
  check_output("linalg_eigvals", out, at::kComplexFloat, values.sizes(), {&self}, OutputDtype::castable);
  out.copy_(values);
  return out;
}

}  // namespace mps_ops
