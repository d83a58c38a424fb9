// torch.heaviside: 0 where x < 0, `values` where x == 0, 1 where x > 0.
// NaN compares false both ways, so heaviside(NaN, v) is 0, as on the CPU.
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
using namespace metal;

struct heaviside_functor {
  template <typename T>
  T operator()(T x, T values) const {
    return x == T(0) ? values : T(x > T(0));
  }
};

MPS_OPS_FOR_ALL_BUT_WIDE_UNSIGNED(REGISTER_BINARY_OP_SAME_TYPE, heaviside)
