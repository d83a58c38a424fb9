// _prelu_kernel: x > 0 ? x : weight * x, weight broadcast against x by the
// host's iterator; in float, rounded once (the CPU's half arithmetic rounds
// the product once too). NaN is not > 0: NaN * weight, NaN.
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
using namespace metal;

struct prelu_functor {
  template <typename T>
  T operator()(T x, T weight) const {
    return x > T(0) ? x : T(float(weight) * float(x));
  }
};

MPS_OPS_FOR_FLOATING(REGISTER_BINARY_OP_SAME_TYPE, prelu)
