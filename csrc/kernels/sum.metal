// Scaled sums over slices: the mean and sum reductions of the margin losses.
#include <metal_stdlib>
#include <mps_ops/reduction.h>

#include "sum_params.h"
using namespace metal;

template <typename In>
struct sum_reducer {
  using state = mps_ops::opmath_t<In>;
  using params = mps_ops::sum_params;
  static state identity() { return state(0); }
  static state fold(state s, state v) { return s + v; }
  static state merge(state a, state b) { return a + b; }
  static state shuffle_xor(state s, ushort mask) { return mps_ops::shuffle_xor(s, mask); }
  static state finish(state s, constant params& p) { return s * p.scale; }
};

// float32 only: the margin losses, its one user, are float32-only.
REGISTER_REDUCE_ONE_OP_SAME_TYPE(sum, float)
