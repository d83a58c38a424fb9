// Host stub of linalg_matrix_exp (torch.linalg.matrix_exp and torch.matrix_exp,
// whose gradient is matrix_exp of a block matrix twice the size): exp(A) by
// scaling and squaring a Taylor polynomial.
//
// Each matrix is scaled by 2^-s so its 1-norm is at most theta_m, the largest
// norm at which the Taylor polynomial of degree m leaves a tail below float32's
// unit roundoff; the polynomial is evaluated with Paterson and Stockmeyer's
// schedule (torch's matmul for the products, our taylor_block kernel adding
// each block of terms), then squared s times. The norms decide s and m on the
// host, as the CPU's does: one read back per call. Half and bfloat16 inputs
// are computed in float32 and rounded once, at the end.
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include "../kernels/matrix_exp_params.h"

#include <ATen/ops/abs.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/gt.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/where.h>

#include <algorithm>
#include <iterator>
#include <cmath>
#include <limits>
#include <vector>

namespace mps_ops {

namespace {

constexpr const char* matrix_exp_name = "linalg.matrix_exp";

// A Taylor degree m = p * q: p - 1 products form A^2 .. A^p, q - 1 Horner
// steps multiply by A^p. theta: sum_{k > m} theta^k / k! = 2^-24 (float32's
// unit roundoff), solved by bisection (test/test_matrix_exp.py re-derives
// each).
struct TaylorSchedule {
  int powers;  // p
  int blocks;  // q
  double theta;
};

constexpr TaylorSchedule taylor_schedules[] = {
    {1, 1, 3.452471159295726e-04}, {2, 1, 7.093930188739541e-03}, {2, 2, 9.322559489654486e-02},
    {3, 2, 3.121459614525017e-01}, {3, 3, 8.511994080990752e-01}, {4, 3, 1.562211457125874e+00},
    {4, 4, 2.672362356606478e+00},
};

constexpr TaylorSchedule widest_schedule = taylor_schedules[std::size(taylor_schedules) - 1];

// The cheapest schedule whose theta covers every matrix's scaled norm.
TaylorSchedule schedule_for(double largest_norm) {
  for (const TaylorSchedule& schedule : taylor_schedules) {
    if (largest_norm <= schedule.theta) {
      return schedule;
    }
  }
  return widest_schedule;
}

// s for one matrix: its norm halved s times is within the widest theta. A
// NaN or infinite norm takes none (its result is NaN, below).
int squarings_for(double norm) {
  if (!std::isfinite(norm) || norm <= widest_schedule.theta) {
    return 0;
  }
  return static_cast<int>(std::ceil(std::log2(norm / widest_schedule.theta)));
}

double inverse_factorial(int k) {
  double value = 1.0;
  for (int i = 2; i <= k; ++i) {
    value /= i;
  }
  return value;
}

// result = [product] + sum_{j < terms} c_{first + j} A^j over contiguous
// float32 batches; powers holds A^1 .. A^(terms - 1).
void add_taylor_block(at::Tensor& result, const at::Tensor* product, const at::Tensor& powers, int first,
                      int terms) {
  static KernelCache kernels("taylor_block");
  taylor_block_params params{};
  params.n = static_cast<int>(result.size(-1));
  params.terms = terms;
  params.with_product = product != nullptr ? 1 : 0;
  params.matrices = result.size(0);
  for (int j = 0; j < terms; ++j) {
    params.coefficients[j] = static_cast<float>(inverse_factorial(first + j));
  }
  KernelFunction kernel(kernels.get(Variant::dense, at::kFloat, at::kFloat));
  kernel.bind_operands(result, product != nullptr ? *product : powers, powers).bind(params);
  kernel.dispatch(Dim3{static_cast<uint32_t>(result.numel()), 1, 1});
}

// The Taylor polynomial of degree p * q of each scaled matrix (matrices, n, n).
at::Tensor taylor_polynomial(const at::Tensor& scaled, const TaylorSchedule& schedule) {
  const int p = schedule.powers;
  const int q = schedule.blocks;
  at::Tensor powers = at::empty({p, scaled.size(0), scaled.size(1), scaled.size(2)}, scaled.options());
  powers.select(0, 0).copy_(scaled);
  for (int k = 1; k < p; ++k) {
    at::Tensor next = powers.select(0, k);
    at::bmm_out(next, powers.select(0, k - 1), scaled);
  }
  at::Tensor result = at::empty(scaled.sizes(), scaled.options());
  // The last block has one term more: c_pq A^p, in place of a Horner step.
  add_taylor_block(result, nullptr, powers, (q - 1) * p, p + 1);
  const at::Tensor highest = powers.select(0, p - 1);
  for (int block = q - 2; block >= 0; --block) {
    const at::Tensor product = at::bmm(result, highest);
    add_taylor_block(result, &product, powers, block * p, p);
  }
  return result;
}

}  // namespace

at::Tensor linalg_matrix_exp(const at::Tensor& self) {
  check_device(matrix_exp_name, self);
  check_square_matrices(self, matrix_exp_name);
  check_floating_or_complex(self, matrix_exp_name);
  check_dtype("linalg_matrix_exp", self);
  const int64_t n = self.size(-1);
  if (self.numel() == 0) {
    return at::empty(self.sizes(), self.options());
  }
  TORCH_CHECK(self.numel() <= UINT32_MAX, "mps_ops: linalg_matrix_exp of 2**32 elements or more");
  const at::Tensor a = self.to(at::kFloat).reshape({-1, n, n}).contiguous();
  const int64_t matrices = a.size(0);

  const at::Tensor norms = at::amax(at::sum(at::abs(a), {-2}), {-1}).to(at::kCPU).contiguous();
  const float* norm_values = norms.const_data_ptr<float>();
  std::vector<int64_t> squarings(matrices);
  std::vector<float> scales(matrices);
  double largest_scaled_norm = 0.0;
  for (int64_t m = 0; m < matrices; ++m) {
    const double norm = norm_values[m];
    squarings[m] = squarings_for(norm);
    scales[m] = std::ldexp(1.0f, -squarings[m]);
    if (std::isfinite(norm)) {
      largest_scaled_norm = std::max(largest_scaled_norm, std::ldexp(norm, -squarings[m]));
    }
  }
  const int64_t most_squarings = *std::max_element(squarings.begin(), squarings.end());
  const auto on_device = [&](const at::Tensor& host_values) {
    return host_values.to(a.device()).view({matrices, 1, 1});
  };
  // Powers of two: the scaling is exact.
  const at::Tensor scaled = most_squarings == 0 ? a : at::mul(a, on_device(at::tensor(scales)));

  at::Tensor result = taylor_polynomial(scaled, schedule_for(largest_scaled_norm));
  const bool same_squarings =
      std::all_of(squarings.begin(), squarings.end(), [&](int64_t s) { return s == most_squarings; });
  // Where matrices need different s, every step squares the batch and keeps
  // the squares of those not yet done.
  const at::Tensor remaining = same_squarings ? at::Tensor() : on_device(at::tensor(squarings));
  for (int64_t step = 0; step < most_squarings; ++step) {
    at::Tensor squared = at::bmm(result, result);
    result = same_squarings ? squared : at::where(at::gt(remaining, step), squared, result);
  }
  // A NaN or an infinity in A makes the CPU's whole matrix NaN (its products
  // spread it); ours too, whatever products this schedule took.
  if (std::any_of(norm_values, norm_values + matrices, [](float norm) { return !std::isfinite(norm); })) {
    const at::Tensor finite = at::isfinite(norms).to(a.device()).view({matrices, 1, 1});
    result = at::where(finite, result, std::numeric_limits<float>::quiet_NaN());
  }
  return result.view(self.sizes()).to(self.scalar_type());
}

}  // namespace mps_ops
