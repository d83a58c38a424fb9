// torch._add_relu: max(self + alpha * other, 0), computed as the CPU does
// (the product rounded, then the sum; a NaN result becomes 0, as the CPU's
// clamp gives it). alpha comes as both a float and an integer; integer
// tensors use the integer (the CPU truncates a float alpha for them).
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
#include <mps_ops/params.h>
using namespace metal;

struct add_relu_functor {
  using params = mps_ops::add_relu_params;
  float alpha;
  long integer_alpha;
  explicit add_relu_functor(constant params& p) : alpha(p.alpha), integer_alpha(p.integer_alpha) {}

  float operator()(float a, float b) const {
    const float sum = a + alpha * b;
    return sum > 0.0f ? sum : 0.0f;
  }
  template <typename T>
  T operator()(T a, T b) const {
    const T sum = T(a + T(integer_alpha) * b);
    return sum > T(0) ? sum : T(0);
  }
};

#define REGISTER_ADD_RELU(T) REGISTER_BINARY_OP_WITH_PARAMS(add_relu, T, T)
REGISTER_ADD_RELU(char)
REGISTER_ADD_RELU(short)
REGISTER_ADD_RELU(int)
REGISTER_ADD_RELU(long)
REGISTER_ADD_RELU(float)
