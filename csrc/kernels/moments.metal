// var and std over slices (var.correction_out, std.correction_out; var_mean
// and std_mean with their means, override ops): Welford
// per thread, Chan et al.'s pairwise merge across threads, in float for
// half and bfloat inputs. The variance divides the centred sum of squares by
// max(0, n - correction), so n <= correction gives inf or NaN as on the CPU
// (and no elements NaN, whatever the correction).
#include <metal_stdlib>
#include <mps_ops/moments.h>

#include "moments_params.h"
using namespace metal;

// Slices whose centred sum of squares overflows float although the variance
// (or the standard deviation) does not (the CPU accumulates in double) go on
// with the values times 2**-80, which leaves room for any count of squares of
// float values. One Welford state, switched to the scaled values where the
// plain sum of squares first overflows: scaling by a power of two is exact
// (but where tiny values underflow, which cannot matter beside values whose
// squares overflow), so this gives what Welford on the scaled values from
// the start gives, with half the state and one division per element (an
// earlier version carried both states: more registers, fewer threads in
// flight on a GPU).
constant constexpr float scale_down = 0x1p-80f;
constant constexpr float scale_up = 0x1p80f;

template <typename In>
struct var_reducer {
  using params = mps_ops::moments_params;
  using welford = mps_ops::welford_reducer;
  // Flat fields (the address-space check copies no nested structs).
  struct state {
    float count;
    float mean;  // times 2**-80 where scaled
    float m2;    // times 2**-160 where scaled
    bool scaled;
  };
  static welford::state moments(state s) { return welford::state{s.count, s.mean, s.m2}; }
  static state with(welford::state w, bool scaled) { return state{w.count, w.mean, w.m2, scaled}; }
  // The moments of the values times 2**-80.
  static welford::state scaled_moments(state s) {
    return s.scaled ? moments(s) : welford::state{s.count, s.mean * scale_down, s.m2 * scale_down * scale_down};
  }
  // Whether an unscaled result overflowed where its inputs were finite.
  static bool overflowed(welford::state result, float a, float b) {
    return !isfinite(result.m2) && isfinite(a) && isfinite(b);
  }

  static state identity() { return with(welford::identity(), false); }
  static state fold(state s, float v) {
    if (!s.scaled) {
      const welford::state plain = welford::fold(moments(s), v);
      if (!overflowed(plain, s.m2, v)) {
        return with(plain, false);
      }
    }
    return with(welford::fold(scaled_moments(s), v * scale_down), true);
  }
  using runs = mps_ops::runs_merged;  // runs merge by of_run (reduction.h's run_folding)
  // A run whose centred squares overflow float (its values finite) goes on
  // scaled, as fold does; one with a value that is not finite takes the
  // mean of its class (welford_reducer::of_run_scaled_terms). Both only
  // where the plain m2 is not finite, the one test on the common path.
  template <uint run>
  static state of_run(thread const float* values) {
    const welford::state plain = welford::of_run<run>(values);
    if (isfinite(plain.m2)) {
      return with(plain, false);
    }
    bool finite = true;
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      finite = finite && isfinite(values[k]);
    }
    if (!finite) {
      return with(welford::of_run_scaled_terms<run>(values), false);
    }
    float scaled[run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      scaled[k] = values[k] * scale_down;
    }
    return with(welford::of_run<run>(scaled), true);
  }
  static state merge(state a, state b) {
    if (!a.scaled && !b.scaled) {
      const welford::state plain = welford::merge(moments(a), moments(b));
      if (!overflowed(plain, a.m2, b.m2)) {
        return with(plain, false);
      }
    }
    return with(welford::merge(scaled_moments(a), scaled_moments(b)), true);
  }
  static state shuffle_xor(state s, ushort mask) {
    return state{mps_ops::shuffle_xor(s.count, mask), mps_ops::shuffle_xor(s.mean, mask),
                 mps_ops::shuffle_xor(s.m2, mask), mps_ops::shuffle_xor(s.scaled, mask)};
  }
  static float finish(state s, constant params& p) {
    // No elements: NaN whatever the correction (a negative one would give
    // 0 / -correction; the CPU fills an empty reduction with NaN).
    if (s.count == 0.0f) {
      return numeric_limits<float>::quiet_NaN();
    }
    const float divisor = max(0.0f, s.count - p.correction);
    const float var = s.m2 / divisor;
    if (!s.scaled) {
      return p.take_sqrt ? sqrt(var) : var;
    }
    return p.take_sqrt ? sqrt(var) * scale_up : var * scale_up * scale_up;
  }
};

// var_mean and std_mean: var's state, finished into the variance (or
// standard deviation) and the mean. The mean is torch.mean's where the slice
// holds an infinity or NaN (inf, -inf, or NaN where both signs or a NaN
// meet), which Welford's running mean is not (inf - inf on the next value
// makes it NaN: the CPU's sequential Welford gives inf only where the
// infinity comes last). A state that has met a non-finite value holds, as
// its mean, one with the class of the sum of the non-finite values met
// (inf, -inf or NaN), and m2 NaN (the variance is NaN, as on the CPU).
// Welford's mean over finite values stays finite, so a non-finite mean
// tells such a state apart, with no field of its own (the sum in a fifth
// field cost a test, a select and an add per element, and registers).
// A slice of no elements has mean NaN, as on the CPU (Welford's identity
// has mean 0).
template <typename In>
struct var_mean_reducer {
  using base = var_reducer<In>;
  using params = mps_ops::moments_params;
  using state = typename base::state;
  static bool welford(state s) { return isfinite(s.mean); }

  static state identity() { return base::identity(); }
  // Welford's fold takes a Welford state to a non-finite one as wanted
  // (its mean: v, or NaN; its m2: NaN), but not a non-finite state on: the
  // next value would turn an infinite mean into NaN.
  static state fold(state s, float v) {
    if (welford(s)) {
      return base::fold(s, v);
    }
    return state{s.count + 1.0f, isfinite(v) ? s.mean : s.mean + v, numeric_limits<float>::quiet_NaN(), false};
  }
  using runs = mps_ops::runs_merged;
  // A run's mean (var_reducer::of_run's) is finite exactly where every
  // value is, and otherwise has the class of the sum of its non-finite
  // values (NaN where both signs or a NaN meet), its m2 NaN: a non-finite
  // state already.
  template <uint run>
  static state of_run(thread const float* values) {
    return base::template of_run<run>(values);
  }
  // Welford's merge takes non-finite states as wanted too: where either mean
  // is not finite, their difference is not either, and the merged mean is
  // the count-weighted sum of the two (both weights > 0), which is inf,
  // -inf or NaN as the sum of their non-finite values is; the merged m2
  // NaN. (This is the merge of every run of 8: no test of its own here.)
  static state merge(state a, state b) { return base::merge(a, b); }
  static state shuffle_xor(state s, ushort mask) { return base::shuffle_xor(s, mask); }
  template <typename Out>
  static void finish(state s, constant params& p, device Out& spread, device Out& mean) {
    spread = static_cast<Out>(base::finish(s, p));
    // (A non-finite mean, scaled or not, stays as it is.)
    const float centre = s.scaled ? s.mean * scale_up : s.mean;
    mean = static_cast<Out>(s.count == 0.0f ? numeric_limits<float>::quiet_NaN() : centre);
  }
};

MPS_OPS_FOR_FLOATING(REGISTER_REDUCE_ONE_OP_WITHIN_256_SAME_TYPE, var)
MPS_OPS_FOR_FLOATING(REGISTER_REDUCE_TWO_OP_WITHIN_256_SAME_TYPE, var_mean)
