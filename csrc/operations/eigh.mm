// Host stubs of _linalg_eigh and _linalg_eigh.eigenvalues (under
// torch.linalg.eigh and eigvalsh): eigenvalues in ascending order and
// orthonormal eigenvectors of real symmetric matrices, read from A's UPLO
// triangle; kernel in csrc/kernels/eigh.metal (cyclic Jacobi). Checks, their
// order and messages are the CPU's. float32 only (the CPU's LAPACK also
// takes float64 and complex).
//
// Eigenvalues contiguous, eigenvectors column-major (column k the vector of
// eigenvalue k), as LAPACK's syevd returns them and the CPU's op lays them
// out.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/linalg_results.h"
#include "../runtime/op_checks.h"

#include "../kernels/eigh_params.h"

#include <ATen/ops/empty.h>

#include <cstdlib>
#include <tuple>
#include <vector>

namespace mps_ops {

namespace {

constexpr const char* eigh_name = "linalg.eigh";

// The largest n taken: the work is O(n**3) a sweep on one threadgroup, as
// linalg_eig's (csrc/operations/eig.mm); past it a call would run for
// minutes, which a clear error (and the CPU) serves better.
constexpr int64_t eigh_largest_n = 1024;

// Jacobi sweeps allowed (float32 converges in about ten), or
// MPS_OPS_EIGH_SWEEPS where set (the tests' way to reach the CPU's
// convergence error, which no matrix reaches on purpose).
int sweep_limit() {
  if (const char* forced = std::getenv("MPS_OPS_EIGH_SWEEPS")) {
    return std::atoi(forced);
  }
  return 60;
}

void check_eigh_input(const at::Tensor& a, c10::string_view uplo) {
  check_device(eigh_name, a);
  check_square_matrices(a, eigh_name);
  TORCH_CHECK(uplo.size() == 1 && (uplo[0] == 'L' || uplo[0] == 'l' || uplo[0] == 'U' || uplo[0] == 'u'),
              "Expected UPLO argument to be 'L' or 'U', but got ", uplo);
}

bool is_lower(c10::string_view uplo) {
  return uplo[0] == 'L' || uplo[0] == 'l';
}

// Eigenvalues, and eigenvectors (column-major batches) where wanted, else an
// empty tensor, as the CPU's op returns them.
std::tuple<at::Tensor, at::Tensor> compute(const at::Tensor& a, bool lower, bool want_vectors) {
  static KernelCache kernels("eigh");
  const int64_t n = a.size(-1);
  at::Tensor values = at::empty(batch_shape_with(matrix_batch(a), {n}), a.options());
  // The workspace: a column-major copy of A; the vectors, the same layout.
  at::Tensor workspace = batched_column_major_copy(a);
  at::Tensor vectors = want_vectors ? empty_batched_column_major(a.sizes(), a.options()) : at::empty({0}, a.options());
  const int64_t matrices = n == 0 ? 0 : values.numel() / n;
  if (matrices == 0) {
    return {values, vectors};
  }
  TORCH_CHECK_NOT_IMPLEMENTED(n <= eigh_largest_n, "mps_ops: ", eigh_name, " of ", n, " x ", n,
                              " matrices: mps_ops takes at most ", eigh_largest_n, " x ", eigh_largest_n,
                              " (one threadgroup per matrix; larger ones would run for minutes). For now, "
                              "compute on the CPU: torch.linalg.eigh(A.cpu())");
  const KernelHandle* handle = kernels.get(Variant::dense, at::kFloat, at::kFloat);
  const uint32_t threads = power_of_two_group(n, eigh_max_threads, handle);
  TORCH_CHECK(matrices <= UINT32_MAX / threads, "mps_ops: ", eigh_name, " of too many matrices");
  const auto floats = a.options();
  at::Tensor rotations = want_vectors ? at::empty({matrices, n, n}, floats) : at::empty({1}, floats);
  const int64_t pair_count = (n + 1) / 2;
  at::Tensor pairs = at::empty({matrices, pair_count * eigh_pair_floats}, floats);
  at::Tensor info = pending_kernel_codes(matrices, a);
  at::Tensor vectors_written = want_vectors ? vectors : at::empty({1}, floats);
  eigh_params params{};
  params.n = static_cast<int>(n);
  params.lower = lower ? 1 : 0;
  params.want_vectors = want_vectors ? 1 : 0;
  params.sweep_limit = sweep_limit();
  KernelFunction kernel(handle);
  kernel.bind_operands(workspace, rotations, pairs, values, vectors_written, info).bind(params);
  kernel.dispatch(Dim3{threads * static_cast<uint32_t>(matrices), 1, 1}, Dim3{threads, 1, 1});
  // The CPU's check after LAPACK's: sweeps that did not converge.
  check_converged(read_kernel_codes(info, eigh_name), eigh_name, a.dim() > 2, "eigenvalues");
  return {values, vectors};
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> _linalg_eigh(const at::Tensor& A, c10::string_view UPLO, bool compute_v) {
  check_eigh_input(A, UPLO);
  check_float32_only("_linalg_eigh", A);
  return compute(A, is_lower(UPLO), compute_v);
}

std::tuple<at::Tensor&, at::Tensor&> _linalg_eigh_eigenvalues(const at::Tensor& A, c10::string_view UPLO,
                                                              bool compute_v, at::Tensor& eigenvalues,
                                                              at::Tensor& eigenvectors) {
  check_eigh_input(A, UPLO);
  check_devices(eigh_name, {&eigenvalues, &eigenvectors});
  // The CPU's structured op checks its outs' dtypes (real eigenvalues, A's
  // dtype for the eigenvectors) before its dtype dispatch.
  check_out_dtype_first(c10::toRealValueType(A.scalar_type()), eigenvalues);
  check_out_dtype_first(A.scalar_type(), eigenvectors);
  check_float32_only("_linalg_eigh", A);
  const auto [values, vectors] = compute(A, is_lower(UPLO), compute_v);
  check_output("_linalg_eigh", eigenvalues, at::kFloat, values.sizes(), {&A});
  // The CPU's structured op: a resized out takes LAPACK's column-major strides.
  check_output_taking_strides("_linalg_eigh", eigenvectors, vectors, {&A, &eigenvalues}, OutputDtype::exact,
                              Restride::resized);
  eigenvalues.copy_(values);
  eigenvectors.copy_(vectors);
  return {eigenvalues, eigenvectors};
}

}  // namespace mps_ops
