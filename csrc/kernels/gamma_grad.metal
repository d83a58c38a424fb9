// Reparameterized gradients of Gamma and Beta draws (fills: torch 2.9 to 2.11
// lack _standard_gamma_grad on MPS, 2.9 to 2.12 _dirichlet_grad): the
// backward of torch.distributions' Gamma, Chi2, Beta and Dirichlet rsample,
// d(draw)/d(concentration) = -(d cdf / d alpha) / pdf at the draw. The host
// stubs are in csrc/operations/gamma_grad.mm.
//
// The CPU's approximations, branch for branch (Jankowiak and Obermeyer,
// "Pathwise Derivatives Beyond the Reparameterization Trick", 2018: series
// for small draws, Rice's saddle-point expansion for large shapes, fitted
// rational corrections elsewhere), with the same branch tests and
// coefficients. The CPU evaluates the double-precision steps in double;
// here they are float, rewritten where float would cancel:
//   * the small-draw series divides the pdf's x^(alpha - 1) e^-x out
//     analytically (no underflow of x^alpha, which float reaches early)
//     and, with digamma(alpha) = digamma(alpha + 1) - 1 / alpha, drops the
//     1 / alpha^2 terms that cancel for small alpha;
//   * the saddle-point expansions are written in the draw relative to the
//     shape (x / alpha, or x - alpha / total), so no power of the shapes
//     overflows, and x - alpha - alpha log(x / alpha) and the Beta's
//     Kullback-Leibler term come from w - log(1 + w) without cancelling;
//   * digamma(total) - digamma(alpha) is summed as a difference.
// The CPU's float steps (the Beta's small-draw series) are float here too.
// Half and bfloat16 compute in float, rounded once (the CPU has neither).
#include <metal_stdlib>
#include <mps_ops/double_float.h>
#include <mps_ops/elementwise.h>
#include <mps_ops/log_probability.h>
using namespace metal;

namespace {

constant constexpr float pi = 3.14159265358979f;
constant constexpr float infinity = numeric_limits<float>::infinity();

// Stirling's tail of digamma for z >= 6: digamma(z) = log z - 1 / (2z) - tail.
inline float digamma_tail(float z) {
  const float w = 1.0f / (z * z);
  return w * (1.0f / 12.0f - w * (1.0f / 120.0f - w * (1.0f / 252.0f - w * (1.0f / 240.0f - w * (1.0f / 132.0f)))));
}

// digamma(x), with the special values of the CPU's digamma in these
// kernels (not torch.digamma's): +inf at 0 of either sign and at the
// negative integers (-inf among them), reflection below 0.
inline float digamma_of(float x) {
  if (isnan(x) || x == infinity) {
    return x;
  }
  if (x == 0.0f || (x < 0.0f && x == floor(x))) {
    return infinity;
  }
  float reflected = 0.0f;
  if (x < 0.0f) {
    // digamma(x) = digamma(1 - x) - pi / tan(pi x)
    reflected = -pi * cospi(x) / sinpi(x);
    x = 1.0f - x;
  }
  float shifted = 0.0f;  // digamma(x) = digamma(x + k) - sum of 1 / (x + j), j < k
  while (x < 6.0f) {
    shifted += 1.0f / x;
    x += 1.0f;
  }
  return log(x) - 0.5f / x - digamma_tail(x) - shifted + reflected;
}

// digamma(sum) - digamma(a) for sum = a + b, without cancelling where
// 0 < b <= a: both shifted together to a >= 6, the shifts' terms and
// Stirling's series taken as differences.
inline float digamma_difference(float a, float b, float sum) {
  if (!(a > 0.0f && b > 0.0f && b <= a) || isinf(a)) {
    return digamma_of(sum) - digamma_of(a);
  }
  float shifted = 0.0f;  // sum of 1 / (a + j) - 1 / (a + b + j)
  while (a < 6.0f) {
    shifted += b / (a * (a + b));
    a += 1.0f;
  }
  const float c = a + b;
  // log(c / a) + (1 / a - 1 / c) / 2 - (tail(c) - tail(a)); tail's leading
  // term 1 / (12 z^2) differenced exactly, the rest directly.
  const float leading = -b * (a + c) / (12.0f * a * a * c * c);
  const float rest = (digamma_tail(c) - 1.0f / (12.0f * c * c)) - (digamma_tail(a) - 1.0f / (12.0f * a * a));
  return mps_ops::log1p_float(b / a) + 0.5f * b / (a * c) - leading - rest + shifted;
}

// Whether x >= c * a, x <= c * a, with the product exact (as the CPU's
// double product of two floats): fma recovers the rounding.
inline bool at_least_product(float x, float c, float a) {
  const float product = c * a;
  return x > product || (x == product && fma(c, a, -product) <= 0.0f);
}
inline bool at_most_product(float x, float c, float a) {
  const float product = c * a;
  return x < product || (x == product && fma(c, a, -product) >= 0.0f);
}

// log(1 + d) and d - log(1 + d), accurate near d = 0 and far from it.
struct log_ratio {
  float log;     // log(1 + d)
  float excess;  // d - log(1 + d)
};
inline log_ratio log_ratio_of(float d, float ratio) {
  if (fabs(d) < 0.5f) {
    return {mps_ops::log1p_float(d), mps_ops::log1p_excess(d)};
  }
  const float l = log(ratio);
  return {l, d - l};
}

// Jankowiak and Obermeyer's fit of the gradient for x >= 0.8, alpha <= 8:
// exp(p / q), p and q cubic in log(alpha) with coefficients quadratic in
// log(x / alpha); rows: constant, linear, quadratic in that log.
constant float gamma_grad_fit[3][8] = {
    {0.16009398f, -0.094634809f, 0.025146376f, -0.0030648343f, 1.0f, 0.32668115f, 0.10406089f, 0.0014179084f},
    {0.53487893f, 0.1298071f, 0.065735949f, -0.0015649758f, 0.16639465f, 0.020070113f, -0.0035938915f,
     -0.00058392623f},
    {0.040121004f, -0.0065914022f, -0.0026286047f, -0.0013441777f, 0.017050642f, -0.0021309326f, 0.00085092367f,
     -1.5247877e-07f},
};

// The CPU's small-draw steps as they stand, for a concentration that is
// not positive and finite: its results there (0 for NaN, infinities where
// they meet) follow from its order of operations.
inline float standard_gamma_grad_small_literal(float alpha, float x) {
  float numer = 1.0f, denom = alpha;
  float series1 = numer / denom, series2 = numer / (denom * denom);
  for (int i = 1; i <= 5; ++i) {
    numer *= -x / float(i);
    denom += 1.0f;
    series1 += numer / denom;
    series2 += numer / (denom * denom);
  }
  const float power = pow(x, alpha);
  const float pdf = pow(x, alpha - 1.0f) * exp(-x);
  const float cdf_alpha = (log(x) - digamma_of(alpha)) * (power * series1) - power * series2;
  const float result = -cdf_alpha / pdf;
  return isnan(result) ? 0.0f : result;
}

inline float standard_gamma_grad(float alpha, float x) {
  if (x < 0.8f && !(alpha > 0.0f && alpha < infinity)) {
    return standard_gamma_grad_small_literal(alpha, x);
  }
  if (x < 0.8f) {
    // -x e^x ((log x - digamma(alpha)) S1 - S2), S_k = sum over i <= 5 of
    // (-x)^i / i! / (alpha + i)^k, whose 1 / alpha^2 terms cancel:
    // (log x - digamma(alpha + 1)) S1 + tail(S1) / alpha - tail(S2), here
    // times alpha, divided out last (1 / alpha overflows for a subnormal
    // alpha, where the result may not).
    float term = 1.0f, tail1 = 0.0f, tail2 = 0.0f;
    for (int i = 1; i <= 5; ++i) {
      term *= -x / float(i);
      const float denom = alpha + float(i);
      tail1 += term / denom;
      tail2 += term / (denom * denom);
    }
    const float scaled = (log(x) - digamma_of(alpha + 1.0f)) * fma(alpha, tail1, 1.0f) + tail1 - alpha * tail2;
    const float result = -x * exp(x) * scaled / alpha;
    return isnan(result) ? 0.0f : result;
  }
  if (alpha > 8.0f) {
    const float inverse = 1.0f / alpha, ratio = x / alpha;
    if (at_least_product(x, 0.9f, alpha) && at_most_product(x, 1.1f, alpha)) {
      // (1 + 24 a (1 + 12 a)) (1440 a^2 + 6 x (53 - 120 x) - 65 x^2 / a
      // + a (107 + 3600 x)) / (1244160 a^4), each factor over a^2
      const float first = 288.0f + inverse * (24.0f + inverse);
      const float second = 1440.0f + ratio * (3600.0f - 720.0f * ratio) + inverse * (107.0f + ratio * (318.0f - 65.0f * ratio));
      return first * second / 1244160.0f;
    }
    // Rice's expansion in r = x / a = 1 + d: -stirling r (log r (1 / (1 - r)
    // -+ g^-1.5 / (a sqrt 8)) - (1 + r) / (2 a (1 - r)^2)), g = r - 1 - log r
    // (x - a exact here, within a factor 2).
    const float d = (x - alpha) / alpha;
    const log_ratio lr = log_ratio_of(d, ratio);
    const float saddle = pow(lr.excess, -1.5f) * inverse / sqrt(8.0f);
    const float bracket = lr.log * (-1.0f / d + (x < alpha ? -saddle : saddle)) - (2.0f + d) * inverse / (2.0f * d * d);
    const float stirling = 1.0f + inverse / 12.0f * (1.0f + inverse / 24.0f);
    return -stirling * ratio * bracket;
  }
  const float ratio = x / alpha;  // past float's range for a subnormal alpha: the logs' difference then
  const float u = isinf(ratio) ? log(x) - log(alpha) : log(ratio), v = log(alpha);
  float c[8];
  for (int i = 0; i < 8; ++i) {
    c[i] = gamma_grad_fit[0][i] + u * (gamma_grad_fit[1][i] + u * gamma_grad_fit[2][i]);
  }
  const float p = c[0] + v * (c[1] + v * (c[2] + v * c[3]));
  const float q = c[4] + v * (c[5] + v * (c[6] + v * c[7]));
  return exp(p / q);
}

// The Beta(alpha, beta) draw x's gradient in alpha for x near 0, as the
// CPU's float steps take it (ten terms of a series, times x (1 - x)^-beta):
// for arguments outside the ordinary (the special results follow from its
// order of operations).
inline float beta_grad_alpha_small_literal(float x, float alpha, float beta) {
  const float factor = digamma_of(alpha) - digamma_of(alpha + beta) - log(x);
  float numer = 1.0f;
  float series = numer / alpha * (factor + 1.0f / alpha);
  for (int i = 1; i <= 10; ++i) {
    numer *= (float(i) - beta) * x / float(i);
    const float denom = alpha + float(i);
    series += numer / denom * (factor + 1.0f / denom);
  }
  const float result = x * pow(1.0f - x, -beta) * series;
  return isnan(result) ? 0.0f : result;
}

// Its gradient in beta for x near 0, the CPU's float steps (eight terms).
inline float beta_grad_beta_small_literal(float x, float alpha, float beta) {
  const float factor = digamma_of(alpha + beta) - digamma_of(beta);
  float numer = 1.0f, betas = 1.0f, dbetas = 0.0f, series = factor / alpha;
  for (int i = 1; i <= 8; ++i) {
    numer *= -x / float(i);
    dbetas = dbetas * (beta - float(i)) + betas;
    betas = betas * (beta - float(i));
    series += numer / (alpha + float(i)) * (dbetas + factor * betas);
  }
  const float result = -pow(1.0f - x, 1.0f - beta) * series;
  return isnan(result) ? 0.0f : result;
}

inline bool ordinary_shapes(float x, float alpha, float beta) {
  return x >= 0.0f && alpha > 0.0f && alpha < infinity && isfinite(beta);
}

inline mps_ops::double_float exact(float value) {
  return mps_ops::double_float{value, 0.0f};
}

// The same series with its sums in double-float: their terms are binomial
// coefficients of (1 - x)^(beta - 1) (over alpha + i), which alternate and
// cancel by orders in float, as the CPU's float32 results show (1e-3
// relative). sum_i c_i / (alpha + i) (factor + 1 / (alpha + i)) is taken as
// (factor' (1 + alpha S1') - S1' + alpha S2') / alpha, factor' = factor +
// 1 / alpha (the i = 0 terms' 1 / alpha^2 cancel), S_k' = sum over i >= 1
// of c_i / (alpha + i)^k.
inline float beta_grad_alpha_small(float x, float alpha, float beta) {
  using namespace mps_ops;
  if (!ordinary_shapes(x, alpha, beta)) {
    return beta_grad_alpha_small_literal(x, alpha, beta);
  }
  const float factor = -digamma_difference(alpha + 1.0f, beta - 1.0f, alpha + beta) - log(x);
  double_float coefficient = exact(1.0f), sum1 = exact(0.0f), sum2 = exact(0.0f);
  for (int i = 1; i <= 10; ++i) {
    coefficient = df_divide(df_mul(coefficient, df_mul(two_sum(float(i), -beta), exact(x))), float(i));
    const double_float inverse = df_reciprocal(two_sum(alpha, float(i)));
    const double_float term = df_mul(coefficient, inverse);
    sum1 = df_add(sum1, term);
    sum2 = df_add(sum2, df_mul(term, inverse));
  }
  // times alpha, divided out last (1 / alpha overflows for a subnormal
  // alpha, where the result may not)
  double_float scaled = df_mul(exact(factor), df_add(exact(1.0f), df_mul(sum1, exact(alpha))));
  scaled = df_add(df_add(scaled, df_negate(sum1)), df_mul(sum2, exact(alpha)));
  const float result = x * pow(1.0f - x, -beta) * scaled.hi / alpha;
  return isnan(result) ? 0.0f : result;
}

// The gradient in beta likewise: factor (1 / alpha + sum_i w_i b_i) + sum_i
// w_i b_i' in double-float, w_i = (-x)^i / i! / (alpha + i), b_i =
// (beta - 1) ... (beta - i) and b_i' its derivative in beta; factor =
// digamma(alpha + beta) - digamma(beta) as a difference (it cancels in
// float for a small alpha: Dirichlet draws near 1 beside a large total).
inline float beta_grad_beta_small(float x, float alpha, float beta) {
  using namespace mps_ops;
  if (!ordinary_shapes(x, alpha, beta)) {
    return beta_grad_beta_small_literal(x, alpha, beta);
  }
  const float factor = digamma_difference(beta, alpha, alpha + beta);
  double_float numer = exact(1.0f), betas = exact(1.0f), dbetas = exact(0.0f);
  double_float with_factor = df_reciprocal(exact(alpha)), rest = exact(0.0f);
  for (int i = 1; i <= 8; ++i) {
    numer = df_divide(df_mul(numer, exact(-x)), float(i));
    const double_float step = two_sum(beta, -float(i));
    dbetas = df_add(df_mul(dbetas, step), betas);
    betas = df_mul(betas, step);
    const double_float weight = df_mul(numer, df_reciprocal(two_sum(alpha, float(i))));
    with_factor = df_add(with_factor, df_mul(weight, betas));
    rest = df_add(rest, df_mul(weight, dbetas));
  }
  const double_float series = df_add(df_mul(exact(factor), with_factor), rest);
  const float result = -pow(1.0f - x, 1.0f - beta) * series.hi;
  return isnan(result) ? 0.0f : result;
}

// Rice's expansion for alpha, beta > 6, in m = alpha / total, n = beta /
// total and d = x - m (m as a float pair, so d holds where x is near the
// mean): every power of the shapes divided out.
inline float beta_grad_alpha_mid(float x, float alpha, float beta, float total) {
  const float m = alpha / total, n = beta / total;
  const float m_low = fma(-m, total, alpha) / total;  // alpha / total - m
  const float d = (x - m) - m_low;
  const float std_dev = sqrt(m * n / (total + 1.0f));
  if (fabs(d) <= 0.1f * std_dev) {
    // Near the mean, the CPU's polynomial over alpha^3 beta^2 total^5 ...
    // regrouped by powers of 1 / total: y = x / m near 1.
    const float y = x / m, inverse_total = 1.0f / total, one_minus_x = 1.0f - x;
    const float q = 540.0f * y * n * n * n + 540.0f * n * n + 1620.0f * one_minus_x * m * n +
                    1080.0f * one_minus_x * m * m +
                    (47.0f * y * n * n * n + (43.0f + 320.0f * x) * n * n) / alpha +
                    inverse_total * ((177.0f - 270.0f * x) * n + (453.0f - 455.0f * x) * m -
                                     88.0f * one_minus_x * m * (m / n));
    return (12.0f + 1.0f / alpha) * (12.0f + 1.0f / beta) * q / (one_minus_x * 12960.0f * (1.0f + 12.0f * total));
  }
  // D = d sqrt(total) is the draw's deviation in standard units (order 1).
  const float root_total = sqrt(total), deviation = d * root_total;
  const float stirling = (1.0f + 1.0f / (12.0f * alpha) + 1.0f / (288.0f * alpha * alpha)) *
                         (1.0f + 1.0f / (12.0f * beta) + 1.0f / (288.0f * beta * beta)) /
                         (1.0f + 1.0f / (12.0f * total) + 1.0f / (288.0f * total * total));
  const float prefactor = -x / (sqrt(2.0f * m * n) * root_total);
  const float term1 = (2.0f * m * m * (x - 1.0f) + m * n * (x - 1.0f) - x * n * n) /
                      (sqrt(2.0f * m / n) * root_total * deviation * deviation);
  const float term2 = -0.5f * mps_ops::log1p_float(d / m);  // log(alpha / (total x)) / 2
  const float term3 = sqrt(8.0f * m * n) / deviation;
  // total (m log(m / x) + n log(n / (1 - x))), summed as w - log(1 + w) terms
  const float divergence = total * (m * mps_ops::log1p_excess(d / m) + n * mps_ops::log1p_excess(-d / n));
  const float term4 = pow(divergence, -1.5f);
  return stirling * prefactor * (term1 + term2 * (term3 + (d < 0.0f ? term4 : -term4)));
}

// Jankowiak and Obermeyer's rational correction to x (digamma(total) -
// digamma(alpha)) / beta: p / q, each a sum over i, j < 3 of u^i a^j times a
// cubic in b (u = log x, a = log alpha - u, b = log total - a).
constant float dirichlet_grad_fit[2][3][3][4] = {
    {{{1.003668233f, -0.01061107488f, -0.0657888334f, 0.01201642863f},
      {0.6336835991f, -0.3557432599f, 0.05486251648f, -0.001465281033f},
      {-0.03276231906f, 0.004474107445f, 0.002429354597f, -0.0001557569013f}},
     {{0.221950385f, -0.3187676331f, 0.01799915743f, 0.01074823814f},
      {-0.2951249643f, 0.06219954479f, 0.01535556598f, 0.001550077057f},
      {0.02155310298f, 0.004170831599f, 0.001292462449f, 6.976601077e-05f}},
     {{-0.05980841433f, 0.008441916499f, 0.01085618172f, 0.002319392565f},
      {0.02911413504f, 0.01400243777f, -0.002721828457f, 0.000751041181f},
      {0.005900514878f, -0.001936558688f, -9.495446725e-06f, 5.385558597e-05f}}},
    {{{1.0f, -0.02924021934f, -0.04438342661f, 0.007285809825f},
      {0.6357567472f, -0.3473456711f, 0.05454656494f, -0.002407477521f},
      {-0.03301322327f, 0.004845219414f, 0.00231480583f, -0.0002307248149f}},
     {{0.5925320577f, -0.1757678135f, 0.01505928619f, 0.000564515273f},
      {0.1014815858f, -0.06589186703f, 0.01272886114f, -0.0007316646956f},
      {-0.007258481865f, 0.001096195486f, 0.0003934994223f, -4.12701925e-05f}},
     {{0.06469649321f, -0.0236701437f, 0.002902096474f, -5.896963079e-05f},
      {0.001925008108f, -0.002869809258f, 0.0008000589141f, -6.063713228e-05f},
      {-0.0003477407336f, 6.959756487e-05f, 1.097287507e-05f, -1.650964693e-06f}}},
};

// d x / d alpha for a Beta(alpha, total - alpha) draw x, over (1 - x): the
// Dirichlet's gradient through its Beta marginals.
inline float dirichlet_grad(float x, float alpha, float total) {
  const float beta = total - alpha;
  const float boundary = total * x * (1.0f - x);
  if (x <= 0.5f && boundary < 2.5f) {
    return beta_grad_alpha_small(x, alpha, beta);
  }
  if (x >= 0.5f && boundary < 0.75f) {
    return -beta_grad_beta_small(1.0f - x, beta, alpha);
  }
  if (alpha > 6.0f && beta > 6.0f) {
    return beta_grad_alpha_mid(x, alpha, beta, total);
  }
  const float u = log(x), a = log(alpha) - u, b = log(total) - a;
  const float pow_u[3] = {1.0f, u, u * u}, pow_a[3] = {1.0f, a, a * a};
  float p = 0.0f, q = 0.0f;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      const float ua = pow_u[i] * pow_a[j];
      constant float* cp = dirichlet_grad_fit[0][i][j];
      constant float* cq = dirichlet_grad_fit[1][i][j];
      p += ua * (cp[0] + b * (cp[1] + b * (cp[2] + b * cp[3])));
      q += ua * (cq[0] + b * (cq[1] + b * (cq[2] + b * cq[3])));
    }
  }
  return p / q * (x * digamma_difference(alpha, beta, total) / beta);
}

}  // namespace

struct standard_gamma_grad_functor {
  template <typename T>
  T operator()(T alpha, T x) const {
    return T(standard_gamma_grad(float(alpha), float(x)));
  }
};

struct dirichlet_grad_functor {
  template <typename T>
  T operator()(T x, T alpha, T total) const {
    return T(dirichlet_grad(float(x), float(alpha), float(total)));
  }
};

MPS_OPS_FOR_FLOATING(REGISTER_BINARY_OP_SAME_TYPE, standard_gamma_grad)
MPS_OPS_FOR_FLOATING(REGISTER_TERNARY_OP_SAME_TYPE, dirichlet_grad)
