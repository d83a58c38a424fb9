// var and std over slices (var.correction_out, std.correction_out): Welford
// per thread, Chan et al.'s pairwise merge across threads, in float for
// half and bfloat inputs. The variance divides the centred sum of squares by
// max(0, n - correction), so n <= correction gives inf or NaN as on the CPU.
#include <metal_stdlib>
#include <mps_ops/moments.h>

#include "moments_params.h"
using namespace metal;

// Welford twice: on the values, and on the values times 2**-80 for slices
// whose centred sum of squares overflows float although the variance (or
// the standard deviation) does not (the CPU accumulates in double). 2**-80
// leaves room for any count of squares of float values.
constant constexpr float scale_down = 0x1p-80f;
constant constexpr float scale_up = 0x1p80f;

template <typename In>
struct var_reducer {
  using params = mps_ops::moments_params;
  using welford = mps_ops::welford_reducer;
  // Flat fields (the address-space check copies no nested structs): the
  // plain and the scaled Welford states, one count for both.
  struct state {
    float count;
    float mean;
    float m2;
    float scaled_mean;
    float scaled_m2;
  };
  static welford::state plain(state s) { return welford::state{s.count, s.mean, s.m2}; }
  static welford::state scaled(state s) { return welford::state{s.count, s.scaled_mean, s.scaled_m2}; }
  static state join(welford::state p, welford::state q) { return state{p.count, p.mean, p.m2, q.mean, q.m2}; }

  static state identity() { return join(welford::identity(), welford::identity()); }
  static state fold(state s, float v) {
    return join(welford::fold(plain(s), v), welford::fold(scaled(s), v * scale_down));
  }
  static state merge(state a, state b) {
    return join(welford::merge(plain(a), plain(b)), welford::merge(scaled(a), scaled(b)));
  }
  static state shuffle_xor(state s, ushort mask) {
    return state{mps_ops::shuffle_xor(s.count, mask), mps_ops::shuffle_xor(s.mean, mask),
                 mps_ops::shuffle_xor(s.m2, mask), mps_ops::shuffle_xor(s.scaled_mean, mask),
                 mps_ops::shuffle_xor(s.scaled_m2, mask)};
  }
  static float finish(state s, constant params& p) {
    const float divisor = max(0.0f, s.count - p.correction);
    if (isfinite(s.m2) || !isfinite(s.scaled_m2)) {
      const float var = s.m2 / divisor;
      return p.take_sqrt ? sqrt(var) : var;
    }
    const float scaled_var = s.scaled_m2 / divisor;
    return p.take_sqrt ? sqrt(scaled_var) * scale_up : scaled_var * scale_up * scale_up;
  }
};

MPS_OPS_FOR_FLOATING(REGISTER_REDUCE_ONE_OP_SAME_TYPE, var)
