// Host stubs of _linalg_svd and _linalg_svd.U (under torch.linalg.svd,
// svdvals, torch.svd, pinv, matrix_rank and the nuclear and spectral norms):
// singular values in descending order and orthonormal singular vectors of
// real matrices; kernel in csrc/kernels/svd.metal (one-sided Jacobi on the
// tall problem: A, or A^T where A is wide). Checks, their order and
// messages are the CPU's. float32 only (the CPU's LAPACK also takes float64
// and complex).
//
// U and Vh column-major, S contiguous, as the CPU's op lays them out.
#include "../runtime/contiguous_output.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/linalg_results.h"
#include "../runtime/op_checks.h"

#include "../kernels/svd_params.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/eye.h>

#include <algorithm>
#include <cstdlib>
#include <tuple>
#include <vector>

namespace mps_ops {

namespace {

constexpr const char* svd_name = "linalg.svd";

// The largest min(m, n) taken, as linalg_eig's and eigh's size limit (the
// work is O(min(m, n)^2 max(m, n)) a sweep on one threadgroup), and the
// largest max(m, n) for full_matrices, whose completion of the basis is
// O(max(m, n)^3) there.
constexpr int64_t svd_largest_k = 1024;
constexpr int64_t svd_largest_full = 4096;

// Jacobi sweeps allowed (float32 converges in about ten), or
// MPS_OPS_SVD_SWEEPS where set (the tests' way to reach the CPU's
// convergence error, which no matrix reaches on purpose).
int svd_sweep_limit() {
  if (const char* forced = std::getenv("MPS_OPS_SVD_SWEEPS")) {
    return std::atoi(forced);
  }
  return 60;
}

void check_svd_input(const at::Tensor& a, const std::optional<c10::string_view>& driver) {
  check_device(svd_name, a);
  TORCH_CHECK(a.dim() >= 2, svd_name, ": The input tensor A must have at least 2 dimensions.");
  check_floating_or_complex(a, svd_name);
  TORCH_CHECK(!driver.has_value(),
              "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend.");
}

struct SvdResult {
  at::Tensor u, s, vh;
};

// Identity matrices of the batch's shape, column-major: full_matrices' U or
// Vh where A has no singular values (an empty dimension).
at::Tensor batched_identity(const at::Tensor& a, int64_t n) {
  return batched_column_major_copy(at::eye(n, a.options()).expand(batch_shape_with(matrix_batch(a), {n, n})));
}

// The op a call serves, as its errors name it, and the CPU call its size
// limit's message advises instead.
struct SvdCaller {
  const char* name;
  const char* cpu_call;
};

constexpr SvdCaller linalg_svd_caller{svd_name, "torch.linalg.svd(A.cpu())"};

SvdResult compute(const at::Tensor& a, bool full_matrices, bool compute_uv, SvdCaller caller = linalg_svd_caller) {
  const char* const name = caller.name;
  static KernelCache kernels("svd");
  const int64_t m = a.size(-2);
  const int64_t n = a.size(-1);
  const int64_t k = std::min(m, n);
  const auto floats = a.options();
  SvdResult result;
  result.s = at::empty(batch_shape_with(matrix_batch(a), {k}), floats);
  const int64_t u_columns = full_matrices ? m : k;
  const int64_t vh_rows = full_matrices ? n : k;
  const int64_t matrices = k == 0 ? 0 : result.s.numel() / k;
  if (matrices == 0) {
    if (!compute_uv) {
      result.u = at::empty({0}, floats);
      result.vh = at::empty({0}, floats);
    } else if (full_matrices) {
      result.u = batched_identity(a, m);
      result.vh = batched_identity(a, n);
    } else {
      result.u = empty_batched_column_major(batch_shape_with(matrix_batch(a), {m, k}), floats);
      result.vh = empty_batched_column_major(batch_shape_with(matrix_batch(a), {k, n}), floats);
    }
    return result;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(k <= svd_largest_k && (!full_matrices || std::max(m, n) <= svd_largest_full),
                              "mps_ops: ", name, " of ", m, " x ", n, " matrices", full_matrices ? " (full_matrices)" : "",
                              ": mps_ops takes min(m, n) up to ", svd_largest_k, " and, with full_matrices, max(m, n) up to ",
                              svd_largest_full, " (one threadgroup per matrix; larger ones would run for minutes). For "
                              "now, compute on the CPU: ", caller.cpu_call);
  // The tall problem: rows >= columns.
  const bool wide = m < n;
  const int64_t rows = wide ? n : m;
  const int64_t columns = k;
  const int64_t left_columns = full_matrices ? rows : columns;
  // B column-major is B^T row-major: A^T's rows (A tall) or A's (A wide).
  at::Tensor workspace = (wide ? a : a.mT()).contiguous().reshape({matrices, columns, rows});
  if (workspace.is_alias_of(a)) {
    workspace = workspace.clone();  // the kernel works in place
  }
  const KernelHandle* handle = kernels.get(Variant::dense, at::kFloat, at::kFloat);
  const uint32_t threads = power_of_two_group(rows, svd_max_threads, handle);
  TORCH_CHECK(matrices <= UINT32_MAX / threads, "mps_ops: ", name, " of too many matrices");
  const int64_t pair_count = (columns + 1) / 2;
  at::Tensor rotations = compute_uv ? at::empty({matrices, columns, columns}, floats) : at::empty({1}, floats);
  at::Tensor pairs = at::empty({matrices, pair_count * svd_pair_floats}, floats);
  at::Tensor row_scratch = at::empty({matrices, rows}, floats);
  // Column-major per matrix: (matrices, columns, rows) contiguous, read back
  // through mT.
  at::Tensor left = compute_uv ? at::empty({matrices, left_columns, rows}, floats) : at::empty({1}, floats);
  at::Tensor right = compute_uv ? at::empty({matrices, columns, columns}, floats) : at::empty({1}, floats);
  at::Tensor info = pending_kernel_codes(matrices, a);
  svd_params params{};
  params.rows = static_cast<int>(rows);
  params.columns = static_cast<int>(columns);
  params.left_columns = static_cast<int>(left_columns);
  params.want_vectors = compute_uv ? 1 : 0;
  params.sweep_limit = svd_sweep_limit();
  KernelFunction kernel(handle);
  kernel.bind_operands(workspace, rotations, pairs, row_scratch, result.s, left, right, info).bind(params);
  kernel.dispatch(Dim3{threads * static_cast<uint32_t>(matrices), 1, 1}, Dim3{threads, 1, 1});
  // The first matrix that failed decides the error: a NaN or an infinity
  // (the kernel's -2), or sweeps that did not converge.
  const std::vector<int> codes = read_kernel_codes(info, name);
  const auto failed = std::find_if(codes.begin(), codes.end(), [](int code) { return code != 0; });
  TORCH_CHECK_LINALG(failed == codes.end() || *failed != -2, name,
                     batch_element(a.dim() > 2, failed - codes.begin()),
                     ": The algorithm failed to converge because the input matrix contained non-finite values.");
  check_converged(codes, name, a.dim() > 2, "singular values");
  if (!compute_uv) {
    result.u = at::empty({0}, floats);
    result.vh = at::empty({0}, floats);
    return result;
  }
  // B = L S R^T. A = B: U = L, Vh = R^T; A wide, A = B^T: U = R, Vh = L^T.
  const at::Tensor l = left.mT();
  const at::Tensor r = right.mT();
  const at::Tensor u = wide ? r : l;
  const at::Tensor vh = wide ? l.mT() : r.mT();
  result.u = batched_column_major_copy(u.reshape(batch_shape_with(matrix_batch(a), {m, u_columns})));
  result.vh = batched_column_major_copy(vh.reshape(batch_shape_with(matrix_batch(a), {vh_rows, n})));
  return result;
}

}  // namespace

// The reduced SVD (U, S, Vh) for another op's stub (linalg_lstsq's drivers),
// its errors in that op's name, its size limit advising that op's CPU call.
std::tuple<at::Tensor, at::Tensor, at::Tensor> reduced_svd_for(const at::Tensor& a, const char* op_name,
                                                               const char* cpu_call) {
  const SvdResult result = compute(a, /*full_matrices=*/false, /*compute_uv=*/true, SvdCaller{op_name, cpu_call});
  return {result.u, result.s, result.vh};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> _linalg_svd(const at::Tensor& A, bool full_matrices, bool compute_uv,
                                                           std::optional<c10::string_view> driver) {
  check_svd_input(A, driver);
  check_float32_only("_linalg_svd", A);
  SvdResult result = compute(A, full_matrices, compute_uv);
  return {result.u, result.s, result.vh};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> _linalg_svd_U(const at::Tensor& A, bool full_matrices,
                                                                bool compute_uv, std::optional<c10::string_view> driver,
                                                                at::Tensor& U, at::Tensor& S, at::Tensor& Vh) {
  check_svd_input(A, driver);
  check_devices(svd_name, {&U, &S, &Vh});
  // The CPU's structured op checks its outs' dtypes (A's for U and Vh, the
  // real one for S) before its dtype dispatch.
  check_out_dtype_first(A.scalar_type(), U);
  check_out_dtype_first(c10::toRealValueType(A.scalar_type()), S);
  check_out_dtype_first(A.scalar_type(), Vh);
  check_float32_only("_linalg_svd", A);
  const SvdResult result = compute(A, full_matrices, compute_uv);
  // The CPU's structured op: a resized out takes LAPACK's column-major strides.
  check_output_taking_strides("_linalg_svd", U, result.u, {&A}, OutputDtype::exact, Restride::resized);
  check_output_taking_strides("_linalg_svd", Vh, result.vh, {&A}, OutputDtype::exact, Restride::resized);
  check_output("_linalg_svd", S, at::kFloat, result.s.sizes(), {&A, &U, &Vh});
  U.copy_(result.u);
  S.copy_(result.s);
  Vh.copy_(result.vh);
  return {U, S, Vh};
}

}  // namespace mps_ops
