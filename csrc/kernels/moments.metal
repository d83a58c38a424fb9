// var and std over slices (var.correction_out, std.correction_out): Welford
// per thread, Chan et al.'s pairwise merge across threads, in float for
// half and bfloat inputs. The variance divides the centred sum of squares by
// max(0, n - correction), so n <= correction gives inf or NaN as on the CPU.
#include <metal_stdlib>
#include <mps_ops/moments.h>
using namespace metal;

template <typename In>
struct var_reducer : mps_ops::welford_reducer {
  using params = mps_ops::moments_params;
  static float finish(state s, constant params& p) {
    const float divisor = max(0.0f, float(s.count) - p.correction);
    const float var = s.m2 / divisor;
    return p.take_sqrt ? sqrt(var) : var;
  }
};

#define REGISTER_VAR(T) REGISTER_REDUCE_ONE_OP(var, T, T)
REGISTER_VAR(half)
REGISTER_VAR(bfloat)
REGISTER_VAR(float)
