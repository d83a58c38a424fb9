// _addmm_activation: activation(beta * self + alpha * (mat1 @ mat2)).
// Floats: an epilogue after torch's own mm, one pass instead of addmm's and
// the activation's two, self broadcast by the host's iterator; it computes in
// float and rounds once (the host hands half and bfloat16 over as float); a
// zero beta or alpha drops its term, NaN included, as the CPU's BLAS call
// does. ReLU keeps NaN (the CPU's clamp passes it); GELU is the exact (erf)
// form the CPU's gelu_ computes. Integers: the whole op in one kernel (below),
// wrapping as the CPU's integer arithmetic does, ReLU only (the CPU has no
// integer GELU: the host refuses it).
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
#include <mps_ops/special_math.h>

#include "addmm_activation_params.h"
using namespace metal;

struct addmm_activation_functor {
  using params = mps_ops::addmm_activation_params;
  float beta, alpha;
  bool use_gelu;
  explicit addmm_activation_functor(constant params& p) : beta(p.beta), alpha(p.alpha), use_gelu(p.use_gelu) {}

  float floating(float self, float product) const {
    const float x = (beta == 0.0f ? 0.0f : beta * self) + (alpha == 0.0f ? 0.0f : alpha * product);
    if (use_gelu) {
      constexpr float one_over_sqrt2 = 0.7071067811865476f;
      return 0.5f * x * (1.0f + mps_ops::erf(x * one_over_sqrt2));
    }
    return isnan(x) || x > 0.0f ? x : 0.0f;
  }
  // Half and bfloat16 come as float (the host multiplies them in float).
  float operator()(float self, float product) const { return floating(self, product); }
};

// Floats: the epilogue's dense and strided variants only (the product is
// never a scalar, and the host makes a 0-dim self one element on the device,
// so no operand is bound as a value).
#define REGISTER_ADDMM_EPILOGUE(T)                                                        \
  MPS_OPS_ELEMENTWISE(addmm_activation, dense, mps_ops::binary_dense, T, T)               \
  MPS_OPS_ELEMENTWISE(addmm_activation, strided, mps_ops::binary_strided, T, T)
REGISTER_ADDMM_EPILOGUE(float)

// Integers: the whole op, one thread per output element, the product summed
// in 64 bits and wrapped to T once (the same residue as the CPU's wrapping
// sums: integer arithmetic mod 2**bits is exact in any order). torch's own
// mm has no integer kernel on every GPU backend (CUDA's has none), so the
// product is ours; integer matrix products are rare and small, and this is
// the plain loop. Instantiated as the `dense` variant of the op's name.
template <typename T>
kernel void addmm_activation_integer(device T* out [[buffer(0)]],
                                     constant T* self [[buffer(1)]],
                                     constant T* mat1 [[buffer(2)]],
                                     constant T* mat2 [[buffer(3)]],
                                     constant mps_ops::addmm_integer_params& p [[buffer(4)]],
                                     uint2 position [[thread_position_in_grid]]) {
  const long row = long(position.y), column = long(position.x);
  long sum = 0;
  for (long k = 0; k < p.inner; ++k) {
    sum += long(mat1[row * p.mat1_row_stride + k * p.mat1_column_stride]) *
           long(mat2[k * p.mat2_row_stride + column * p.mat2_column_stride]);
  }
  const T product = T(sum);
  const T x = T(T(p.beta) * self[row * p.self_row_stride + column * p.self_column_stride] + T(p.alpha) * product);
  out[row * p.columns + column] = x > T(0) ? x : T(0);
}

#define REGISTER_ADDMM_INTEGER(T) \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(addmm_activation, dense, T, T), addmm_activation_integer, T)
REGISTER_ADDMM_INTEGER(uchar)
REGISTER_ADDMM_INTEGER(char)
REGISTER_ADDMM_INTEGER(short)
REGISTER_ADDMM_INTEGER(int)
REGISTER_ADDMM_INTEGER(long)
