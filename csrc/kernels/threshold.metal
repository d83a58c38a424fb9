// threshold (x <= bound ? value : x), threshold_backward (ReLU's backward:
// x <= bound ? 0 : grad) and hardtanh_backward (grad where lower < x <
// upper, else 0): one read of each operand and one write per element. As
// the CPU: floating inputs compare in float against the bounds as given (a
// bound between two half values is not rounded first), integers against the
// bound truncated to their type; NaN compares false, so it passes (x, or
// its gradient).
#include <metal_stdlib>
#include <mps_ops/elementwise.h>

#include "threshold_params.h"
using namespace metal;

namespace {

// The bound and the replacement as the CPU converts them for the input's
// type (threshold_params); overloads, not a type trait, pick the floating
// types' pair.
struct threshold_rule {
  float bound, value;
  long bound_integer, value_integer;

  explicit threshold_rule(constant mps_ops::threshold_params& p)
      : bound(p.bound), value(p.value), bound_integer(p.bound_integer), value_integer(p.value_integer) {}

  bool at_or_below(float x) const { return x <= bound; }
  bool at_or_below(half x) const { return float(x) <= bound; }
  bool at_or_below(bfloat x) const { return float(x) <= bound; }
  template <typename T>
  bool at_or_below(T x) const {
    return long(x) <= bound_integer;
  }

  float replacement(float) const { return value; }
  half replacement(half) const { return half(value); }
  bfloat replacement(bfloat) const { return bfloat(value); }
  template <typename T>
  T replacement(T) const {
    return T(value_integer);
  }
};

}  // namespace

struct threshold_functor {
  using params = mps_ops::threshold_params;
  threshold_rule rule;
  explicit threshold_functor(constant params& p) : rule(p) {}

  template <typename T>
  T operator()(T x) const {
    return rule.at_or_below(x) ? rule.replacement(x) : x;
  }
};

// Operands (self, grad), as the CPU's iterator orders them.
struct threshold_backward_functor {
  using params = mps_ops::threshold_params;
  threshold_rule rule;
  explicit threshold_backward_functor(constant params& p) : rule(p) {}

  template <typename T>
  T operator()(T x, T grad) const {
    return rule.at_or_below(x) ? T(0) : grad;
  }
};

// Operands (grad, self).
struct hardtanh_backward_functor {
  using params = mps_ops::hardtanh_backward_params;
  float lower, upper;
  explicit hardtanh_backward_functor(constant params& p) : lower(p.lower), upper(p.upper) {}

  template <typename T>
  T operator()(T grad, T x) const {
    const float v = float(x);
    return (v <= lower || v >= upper) ? T(0) : grad;
  }
};

MPS_OPS_FOR_INTEGRAL(REGISTER_UNARY_OP_SAME_TYPE, threshold)
MPS_OPS_FOR_FLOATING(REGISTER_UNARY_OP_SAME_TYPE, threshold)
MPS_OPS_FOR_INTEGRAL(REGISTER_BINARY_OP_SAME_TYPE, threshold_backward)
MPS_OPS_FOR_FLOATING(REGISTER_BINARY_OP_SAME_TYPE, threshold_backward)
MPS_OPS_FOR_FLOATING(REGISTER_BINARY_OP_SAME_TYPE, hardtanh_backward)
