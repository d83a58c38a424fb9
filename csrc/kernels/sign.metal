// sign and the sign and infinity predicates.
//   sign      (0 < x) - (x < 0) in x's type, as the CPU computes it: NaN and
//             both zeros give +0; bool is its own sign.
//   signbit   the sign bit of a float (true for -0.0 and a negative NaN);
//             x < 0 for an integer (false for bool and unsigned types).
//   isposinf, isneginf   x == +inf, x == -inf (false for every integer).
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
using namespace metal;

struct sign_functor {
  template <typename T>
  T operator()(T x) const {
    return T(int(T(0) < x) - int(x < T(0)));
  }
};

struct signbit_functor {
  template <typename T>
  bool operator()(T x) const {
    return x < T(0);
  }
  bool operator()(float x) const { return signbit(x); }
  bool operator()(half x) const { return signbit(x); }
  bool operator()(bfloat x) const { return signbit(x); }
};

// No integer converts to an infinite float.
struct isposinf_functor {
  template <typename T>
  bool operator()(T x) const {
    return float(x) == numeric_limits<float>::infinity();
  }
};

struct isneginf_functor {
  template <typename T>
  bool operator()(T x) const {
    return float(x) == -numeric_limits<float>::infinity();
  }
};

MPS_OPS_FOR_ALL_BUT_WIDE_UNSIGNED(REGISTER_UNARY_OP_SAME_TYPE, sign)
MPS_OPS_FOR_ALL(REGISTER_UNARY_OP, signbit, bool)
MPS_OPS_FOR_ALL(REGISTER_UNARY_OP, isposinf, bool)
MPS_OPS_FOR_ALL(REGISTER_UNARY_OP, isneginf, bool)
