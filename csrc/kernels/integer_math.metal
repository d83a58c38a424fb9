// Integer element-wise math: torch.gcd and torch.lcm, bit for bit the CPU's
// (aten's calc_gcd and lcm kernel): the same operations in the element type,
// with C++'s integer promotions (uchar, char and short compute in int and
// wrap when stored back) and two's-complement wrapping where a value
// overflows (abs of the most negative value is itself; -fwrapv on the C++
// targets, as integers wrap on the GPU). So gcd can be negative (gcd(0, x)
// is abs(x), which wraps for the most negative x), as on the CPU.
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
using namespace metal;

struct gcd_functor {
  template <typename T>
  T operator()(T a_in, T b_in) const {
    T a = T(abs(a_in));
    T b = T(abs(b_in));
    while (a != 0) {
      const T c = a;
      a = T(b % a);
      b = c;
    }
    return b;
  }
};

struct lcm_functor {
  template <typename T>
  T operator()(T a, T b) const {
    const T g = gcd_functor()(a, b);
    if (g == 0) {
      return T(0);
    }
    // The most negative int or long over a gcd of -1 (from a most negative
    // input) traps on the CPU, which then crashes; here it wraps (-a is a).
    // (g is promoted as the division would promote it: a uchar g is never -1.)
    return T(abs((g == -1 ? -a : a / g) * b));
  }
};

MPS_OPS_FOR_INTEGRAL(REGISTER_BINARY_OP_SAME_TYPE, gcd)
MPS_OPS_FOR_INTEGRAL(REGISTER_BINARY_OP_SAME_TYPE, lcm)
