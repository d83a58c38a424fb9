// var and std over slices (var.correction_out, std.correction_out): Welford
// per thread, Chan et al.'s pairwise merge across threads, in float for
// half and bfloat inputs. The variance divides the centred sum of squares by
// max(0, n - correction), so n <= correction gives inf or NaN as on the CPU.
#include <metal_stdlib>
#include <mps_ops/moments.h>
using namespace metal;

// Welford twice: on the values, and on the values times 2**-80 for slices
// whose centred sum of squares overflows float although the variance (or
// the standard deviation) does not (the CPU accumulates in double).
template <typename In>
struct var_reducer {
  using params = mps_ops::moments_params;
  using welford = mps_ops::welford_reducer;
  struct state {
    welford::state plain;
    welford::state scaled;
  };
  static constexpr float down = 0x1p-80f, up = 0x1p80f;  // room for any count of squares of float values
  static state identity() { return state{welford::identity(), welford::identity()}; }
  static state fold(state s, float v) { return state{welford::fold(s.plain, v), welford::fold(s.scaled, v * down)}; }
  static state merge(state a, state b) {
    return state{welford::merge(a.plain, b.plain), welford::merge(a.scaled, b.scaled)};
  }
  static state shuffle_xor(state s, ushort mask) {
    return state{welford::shuffle_xor(s.plain, mask), welford::shuffle_xor(s.scaled, mask)};
  }
  static float finish(state s, constant params& p) {
    const float divisor = max(0.0f, float(s.plain.count) - p.correction);
    if (isfinite(s.plain.m2) || !isfinite(s.scaled.m2)) {
      const float var = s.plain.m2 / divisor;
      return p.take_sqrt ? sqrt(var) : var;
    }
    const float scaled_var = s.scaled.m2 / divisor;
    return p.take_sqrt ? sqrt(scaled_var) * up : scaled_var * up * up;
  }
};

#define REGISTER_VAR(T) REGISTER_REDUCE_ONE_OP(var, T, T)
REGISTER_VAR(half)
REGISTER_VAR(bfloat)
REGISTER_VAR(float)
