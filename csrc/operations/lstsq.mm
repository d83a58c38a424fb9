// Host stub of linalg_lstsq.out (torch.linalg.lstsq's functional form is a
// composite over it): least-squares solutions of A X = B for batches of real
// matrices, every driver the CPU takes. Checks, their order and messages are
// the CPU's; float32 only (the CPU's LAPACK also takes float64 and complex).
//
// gels, as LAPACK's: the QR factorisation of A (A^T where A is wide) by our
// geqrf kernel (csrc/operations/qr.mm), Q^T B (or Q [Z; 0]) by our ormqr,
// and R's triangular system by torch's solve_triangular (native on MPS in
// every release); an exact zero on R's diagonal raises the CPU's LinAlgError.
// gelsy, gelsd and gelss, the rank-revealing drivers: the minimum-norm
// solution from our SVD (csrc/operations/svd.mm), singular values at most
// rcond times the largest counted as zero, as gelsd and gelss define rank
// (gelsy estimates the same rank by a pivoted QR: the same rank and solution
// wherever the gap in the singular values is clear). The geqrf, ormqr and svd
// stubs are called directly: they serve every release this one does.
#include "../runtime/contiguous_output.h"
#include "../runtime/linalg_results.h"
#include "../runtime/op_checks.h"

#include <ATen/ExpandUtils.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/all.h>
#include <ATen/ops/argmax.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/diagonal.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/gt.h>
#include <ATen/ops/linalg_solve_triangular.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/triu.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace mps_ops {

std::tuple<at::Tensor, at::Tensor> geqrf(const at::Tensor& self);
at::Tensor ormqr(const at::Tensor& self, const at::Tensor& input2, const at::Tensor& input3, bool left,
                 bool transpose);
// svd.mm's reduced SVD for another op: its errors name that op.
std::tuple<at::Tensor, at::Tensor, at::Tensor> reduced_svd_for(const at::Tensor& a, const char* op_name,
                                                               const char* cpu_call);

namespace {

constexpr const char* lstsq_name = "torch.linalg.lstsq";

enum class LstsqDriver { gels, gelsy, gelsd, gelss };

// torch's choice: the driver named (any case), else gelsy, the default
// everywhere but CUDA (the CPU's, and MPS's own from torch 2.14).
LstsqDriver lstsq_driver(const std::optional<c10::string_view>& driver) {
  if (!driver.has_value()) {
    return LstsqDriver::gelsy;
  }
  std::string name(driver->begin(), driver->end());
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name == "gels") return LstsqDriver::gels;
  if (name == "gelsy") return LstsqDriver::gelsy;
  if (name == "gelsd") return LstsqDriver::gelsd;
  TORCH_CHECK(name == "gelss", lstsq_name, ": parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
  return LstsqDriver::gelss;
}

// The rcond each LAPACK driver uses for the one given: gelsd takes machine
// precision for any outside (0, 1) (its xLALSD), gelss for a negative one;
// gelsy's test keeps every nonzero singular value for a negative one.
double lapack_rcond(LstsqDriver driver, double rcond) {
  const double epsilon = std::numeric_limits<float>::epsilon();
  switch (driver) {
    case LstsqDriver::gelsd:
      return rcond <= 0 || rcond >= 1 ? epsilon : rcond;
    case LstsqDriver::gelss:
      return rcond < 0 ? epsilon : rcond;
    default:
      return std::max(rcond, 0.0);
  }
}

// The problem as the kernels take it: B as a batch of matrices, both
// batches broadcast against each other.
struct LstsqProblem {
  at::Tensor a;  // (*a_batch, m, n)
  at::Tensor b;  // (*batch, m, k)
  std::vector<int64_t> batch;
  bool vector_case;
  int64_t m, n, k;
};

LstsqProblem check_lstsq_inputs(const at::Tensor& input, const at::Tensor& other) {
  TORCH_CHECK(input.dim() >= 2, lstsq_name, ": input must have at least 2 dimensions.");
  TORCH_CHECK(other.dim() >= 1, lstsq_name, ": other must have at least 1 dimension.");
  TORCH_CHECK(input.scalar_type() == other.scalar_type(), lstsq_name,
              ": Expected input and other to have the same dtype, but got input's dtype ", input.scalar_type(),
              " and other's dtype ", other.scalar_type());
  const int64_t dim_diff = input.dim() - other.dim();
  TORCH_CHECK(0 <= dim_diff && dim_diff <= 1, lstsq_name,
              ": input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1");
  LstsqProblem p;
  // torch's linalg_solve_is_vector_rhs: B is one vector per matrix of A
  // (B of one dim fewer but another batch is a matrix, or matrices).
  p.vector_case = other.dim() == 1 ||
                  (dim_diff == 1 && other.sizes().equals(input.sizes().slice(0, input.dim() - 1)));
  const at::Tensor b = p.vector_case ? other.unsqueeze(-1) : other;
  TORCH_CHECK(input.size(-2) == b.size(-2), lstsq_name,
              p.vector_case ? ": input.size(-2) should match other.size(-1)"
                            : ": input.size(-2) should match other.size(-2)");
  p.a = input;
  p.m = input.size(-2);
  p.n = input.size(-1);
  p.k = b.size(-1);
  // As torch's broadcast_batch_size: B's leading dims as many as A's batch
  // (a B matrix of one dim fewer gives its rows).
  p.batch = at::infer_size(matrix_batch(input), b.sizes().slice(0, input.dim() - 2));
  p.b = b.expand(batch_shape_with(p.batch, {p.m, p.k}));
  return p;
}

struct LstsqResult {
  at::Tensor solution, residuals, rank, singular_values;
  bool has_residuals = false;  // m > n, and (gelsd, gelss) every matrix of full rank
};

// The CPU's LinAlgError where R (A's, or A^T's) has an exact zero on its
// diagonal, as LAPACK's trtrs finds it: its 1-based index is the code.
void check_full_rank(const at::Tensor& r_diagonal, bool batched) {
  const at::Tensor zero = r_diagonal.eq(0).to(at::kFloat).reshape({-1, r_diagonal.size(-1)});
  const at::Tensor codes = at::where(zero.sum(-1).gt(0), zero.argmax(-1) + 1, 0).to(at::kInt);
  const std::vector<int> code_of = read_kernel_codes(codes, lstsq_name);
  for (size_t i = 0; i < code_of.size(); ++i) {
    TORCH_CHECK_LINALG(code_of[i] == 0, lstsq_name, batch_element(batched, static_cast<int64_t>(i)),
                       ": The least squares solution could not be computed because the input matrix does not "
                       "have full rank (error code: ",
                       code_of[i], ").");
  }
}

// gels: X, and the residuals where A is tall (the squared norms of Q^T B's
// rows past n, as LAPACK leaves them).
std::tuple<at::Tensor, at::Tensor> solve_by_qr(const LstsqProblem& p) {
  const at::TensorOptions floats = p.a.options();
  const std::vector<int64_t> solution_shape = batch_shape_with(p.batch, {p.n, p.k});
  const bool tall = p.m >= p.n;
  const int64_t p_min = std::min(p.m, p.n);
  if (p_min == 0 || p.k == 0) {
    // LAPACK's quick return zeroes B: a zero solution and zero residuals.
    return {at::zeros(solution_shape, floats),
            p.m > p.n ? at::zeros(batch_shape_with(p.batch, {p.k}), floats) : at::empty({0}, floats)};
  }
  // One factorisation per matrix of A, its reflectors broadcast over B's batch.
  const auto [factored, tau] = mps_ops::geqrf(tall ? p.a : p.a.mT());
  const at::Tensor r = at::triu(factored.narrow(-2, 0, p_min));
  check_full_rank(at::diagonal(r, 0, -2, -1), p.a.dim() > 2 && p.a.numel() / (p.m * p.n) > 1);
  const int64_t reflector_rows = tall ? p.m : p.n;
  const at::Tensor reflectors = factored.expand(batch_shape_with(p.batch, {reflector_rows, p_min}));
  const at::Tensor taus = tau.expand(batch_shape_with(p.batch, {p_min}));
  if (tall) {
    const at::Tensor qtb = mps_ops::ormqr(reflectors, taus, p.b, /*left=*/true, /*transpose=*/true);
    const at::Tensor x = at::linalg_solve_triangular(r, qtb.narrow(-2, 0, p.n), /*upper=*/true);
    const at::Tensor residuals = p.m > p.n ? qtb.narrow(-2, p.n, p.m - p.n).square().sum(-2) : at::empty({0}, floats);
    return {x, residuals};
  }
  // A = R^T Q^T: R^T Z = B, then X = Q [Z; 0], the minimum-norm solution.
  const at::Tensor z = at::linalg_solve_triangular(r.mT(), p.b, /*upper=*/false);
  const at::Tensor padded = at::cat({z, at::zeros(batch_shape_with(p.batch, {p.n - p.m, p.k}), floats)}, -2);
  return {mps_ops::ormqr(reflectors, taus, padded, /*left=*/true, /*transpose=*/false), at::empty({0}, floats)};
}

// gelsy, gelsd and gelss: X = V S^+ U^T B, singular values at most
// rcond * the largest counted as zero; the rank, and the singular values
// and residuals where the driver returns them.
LstsqResult solve_by_svd(const LstsqProblem& p, LstsqDriver driver, double rcond) {
  const at::TensorOptions floats = p.a.options();
  // The SVD's errors name lstsq (a NaN's LinAlgError, the size limit's
  // NotImplementedError with lstsq's CPU call).
  const auto [u, s, vh] = mps_ops::reduced_svd_for(p.a, lstsq_name, "torch.linalg.lstsq(A.cpu(), B.cpu())");
  const at::Tensor largest = s.size(-1) ? s.narrow(-1, 0, 1) : s;
  const at::Tensor kept = s.gt(largest * rcond);
  LstsqResult result;
  // gelsy's quick return where B has no columns: rank 0, as LAPACK's.
  result.rank = driver == LstsqDriver::gelsy && p.k == 0 ? at::zeros(matrix_batch(p.a), floats.dtype(at::kLong))
                                                          : kept.sum(-1, /*keepdim=*/false, at::kLong);
  const at::Tensor inverted = at::where(kept, at::reciprocal(s), 0);
  const at::Tensor x = at::matmul(vh.mT(), inverted.unsqueeze(-1) * at::matmul(u.mT(), p.b));
  result.solution = x.expand(batch_shape_with(p.batch, {p.n, p.k}));
  result.singular_values = driver == LstsqDriver::gelsy ? at::empty({0}, floats) : s;
  // As the CPU: gelsd and gelss's only where every matrix has full rank
  // (gelsy returns none).
  result.has_residuals = driver != LstsqDriver::gelsy && p.m > p.n && result.rank.eq(p.n).all().item<bool>();
  result.residuals = result.has_residuals ? (at::matmul(p.a, result.solution) - p.b).square().sum(-2)
                                          : at::empty({0}, floats);
  return result;
}

// The CPU's layout: X in the first n rows of a column-major max(m, n) x k
// buffer (LAPACK's B), one vector per matrix where B is.
at::Tensor laid_out_as_lapack(const at::Tensor& x, const LstsqProblem& p) {
  const int64_t buffer_rows = std::max(p.m, p.n);
  at::Tensor buffer = empty_batched_column_major(batch_shape_with(p.batch, {buffer_rows, p.k}), x.options());
  at::Tensor solution = buffer.narrow(-2, 0, p.n);
  solution.copy_(x);
  return p.vector_case ? solution.squeeze(-1) : solution;
}

// torch's rule for writing into the outs directly: a solution empty or of
// LAPACK's buffer shape (max(m, n) rows, column-major; for an unbatched B
// matrix, a shape torch never matches), rank and singular values of their
// dtype and, where the driver sets them and they are not empty, of their
// shape and contiguous. Otherwise the CPU computes apart and copies.
bool outs_take_results_directly(const LstsqProblem& p, const at::Tensor& self, const at::Tensor& other,
                                LstsqDriver driver, const at::Tensor& solution, const at::Tensor& rank,
                                const at::Tensor& singular_values) {
  std::vector<int64_t> buffer_shape = p.batch;
  buffer_shape.push_back(std::max(p.m, p.n));
  if (!p.vector_case && other.dim() > 2) {
    buffer_shape.push_back(p.k);
  }
  const bool column_major = p.vector_case ? solution.is_contiguous() : solution.dim() >= 2 && solution.mT().is_contiguous();
  if (solution.scalar_type() != self.scalar_type() ||
      (solution.numel() != 0 && (!column_major || !solution.sizes().equals(buffer_shape)))) {
    return false;
  }
  const auto taken = [](const at::Tensor& out, c10::ScalarType dtype, at::IntArrayRef shape) {
    return out.scalar_type() == dtype && (out.numel() == 0 || (out.sizes().equals(shape) && out.is_contiguous()));
  };
  const at::IntArrayRef a_batch = matrix_batch(self);
  if (driver != LstsqDriver::gels && !taken(rank, at::kLong, a_batch)) {
    return false;
  }
  const bool returns_singular_values = driver == LstsqDriver::gelsd || driver == LstsqDriver::gelss;
  return !returns_singular_values ||
         taken(singular_values, c10::toRealValueType(self.scalar_type()), batch_shape_with(a_batch, {std::min(p.m, p.n)}));
}

// An out written as resize_output and copy_ write it (contiguous where
// resized).
void copy_into(at::Tensor& out, const at::Tensor& value, std::initializer_list<const at::Tensor*> read) {
  check_output("linalg_lstsq", out, value.scalar_type(), value.sizes(), read, OutputDtype::castable);
  out.copy_(value);
}

// The solution written where torch's LAPACK call leaves it: an empty out
// becomes the buffer's view, a buffer-shaped one gets X in its first n rows
// and is restrided to them.
void write_solution_in_place(at::Tensor& solution, const at::Tensor& x, const LstsqProblem& p,
                             std::initializer_list<const at::Tensor*> read) {
  if (solution.numel() == 0) {
    solution.set_(laid_out_as_lapack(x, p));
    return;
  }
  check_no_aliasing(solution, read);
  const at::Tensor view = solution.narrow(p.vector_case ? -1 : -2, 0, p.n);
  view.copy_(p.vector_case ? x.squeeze(-1) : x);
  solution.set_(solution.storage(), view.storage_offset(), view.sizes(), view.strides());
}

}  // namespace

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> linalg_lstsq_out(
    const at::Tensor& self, const at::Tensor& b, std::optional<double> rcond, std::optional<c10::string_view> driver,
    at::Tensor& solution, at::Tensor& residuals, at::Tensor& rank, at::Tensor& singular_values) {
  LstsqProblem p = check_lstsq_inputs(self, b);
  check_devices(lstsq_name, {&self, &b, &solution, &residuals, &rank, &singular_values});
  const c10::ScalarType real = c10::toRealValueType(self.scalar_type());
  check_linalg_castable(lstsq_name, self.scalar_type(), solution, "solution");
  check_linalg_castable(lstsq_name, real, residuals, "residuals");
  check_linalg_castable(lstsq_name, at::kLong, rank, "rank");
  check_linalg_castable(lstsq_name, real, singular_values, "singular_values");
  const LstsqDriver chosen = lstsq_driver(driver);
  TORCH_CHECK(rcond.has_value() || real == at::kFloat || real == at::kDouble,
              "This function doesn't handle types other than float and double");
  check_float32_only("linalg_lstsq", self);
  const double rcond_value = rcond.has_value() ? lapack_rcond(chosen, *rcond)
                                               : std::numeric_limits<float>::epsilon() * static_cast<double>(std::max(p.m, p.n));

  const bool direct = outs_take_results_directly(p, self, b, chosen, solution, rank, singular_values);
  // Written directly, torch's LAPACK call takes the rank and singular values
  // outs only in their own dtypes, even where the driver leaves them alone
  // (an internal assert of torch's; here a plain error).
  TORCH_CHECK(!direct || (rank.scalar_type() == at::kLong && singular_values.scalar_type() == real), lstsq_name,
              ": Expected rank of dtype Long and singular_values of dtype ", real, ", but got ", rank.scalar_type(),
              " and ", singular_values.scalar_type());
  LstsqResult result;
  if (chosen == LstsqDriver::gels) {
    std::tie(result.solution, result.residuals) = solve_by_qr(p);
    result.has_residuals = p.m > p.n;
    result.rank = at::empty({0}, self.options().dtype(at::kLong));
    result.singular_values = at::empty({0}, self.options());
  } else {
    result = solve_by_svd(p, chosen, rcond_value);
  }
  const std::initializer_list<const at::Tensor*> read = {&self, &b};
  if (!direct) {
    copy_into(solution, p.vector_case ? result.solution.squeeze(-1) : result.solution, read);
    copy_into(residuals, result.residuals.contiguous(), read);
    copy_into(rank, result.rank.contiguous(), read);
    copy_into(singular_values, result.singular_values.contiguous(), read);
    return {solution, residuals, rank, singular_values};
  }
  // What the driver does not set stays as the caller passed it.
  write_solution_in_place(solution, result.solution, p, read);
  if (result.has_residuals) {
    // torch sums them into the out (sum_out), which takes only their dtype.
    TORCH_CHECK(residuals.scalar_type() == result.residuals.scalar_type(), "Expected out tensor to have dtype ",
                c10::scalarTypeToTypeMeta(result.residuals.scalar_type()).name(), ", but got ",
                c10::scalarTypeToTypeMeta(residuals.scalar_type()).name(), " instead");
    copy_into(residuals, result.residuals.contiguous(), read);
  }
  if (chosen != LstsqDriver::gels) {
    copy_into(rank, result.rank, read);
  }
  if (chosen == LstsqDriver::gelsd || chosen == LstsqDriver::gelss) {
    copy_into(singular_values, result.singular_values, read);
  }
  return {solution, residuals, rank, singular_values};
}

}  // namespace mps_ops
