// The in-place random fills cauchy_, log_normal_ and geometric_ (fills for
// torch 2.9 and 2.10; host stubs in csrc/operations/random_fills.mm): a
// thread per random_fill_elements (32) elements draws 8 Philox blocks
// (counters: the thread's index, the block's, and key words 2 and 3), each
// of whose 4 words makes an open uniform on (0, 1), and transforms them as
// the CPU's samplers do, in float.
//   - A block's 10 rounds cost more than most transforms: every word is used.
//   - Several blocks a thread share the thread's own start (its place in the
//     grid, the key's and the parameters' loads, whose latency only other
//     threads hide). On the H200, 4, 8, 16 and 32 elements a thread gave
//     cauchy_ 0.62x, 0.79x, 0.86x and 0.88x torch's CUDA kernel.
//   - Its elements lie a grid apart (index, index + threads, ...), so each
//     store of a SIMD group is one contiguous run.
//   - The loops have fixed trip counts, so they unroll and a block's words
//     stay in registers (a loop that ended at the last element indexed them
//     at run time, through memory: 0.39-0.73x torch on the H200).
// The transforms:
//   cauchy_      median + sigma tan(pi (U - 1/2)) (mps_ops/half_turns.h)
//   log_normal_  exp(mean + std N), N by Box and Muller: two normals from
//                each pair of uniforms (half and bfloat: fast exp and angle)
//   geometric_   ceil(log U / log(1 - p)), the trials up to the first success
//                (times the host's 1 / log(1 - p))
// An integer geometric_ past the dtype's range saturates at its largest
// value (the CPU's conversion from double gives garbage there).
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/half_turns.h>
#include <mps_ops/philox.h>
#include "random_fills_params.h"
using namespace metal;

namespace {

// value in T: floats round (to infinity past their range); integers (counts,
// >= 1) saturate at their largest value.
template <typename T>
struct stored_as {
  static T from(float value) {
    return value >= float(numeric_limits<T>::max()) ? numeric_limits<T>::max() : static_cast<T>(value);
  }
};
template <> struct stored_as<float> {
  static float from(float value) { return value; }
};
template <> struct stored_as<half> {
  static half from(float value) { return static_cast<half>(value); }
};
template <> struct stored_as<bfloat> {
  static bfloat from(float value) { return static_cast<bfloat>(value); }
};

// The math of a log-normal draw stored in T. float: the precise exp and
// the exact angle. half and bfloat: the fast exp, within a few float ulps
// (Metal's: 3 + 2|x|, under 2**-15 relative over bfloat's range), and the
// fast angle (mps_ops::box_muller_fast_angle), both far under their own
// rounding (2**-11 and 2**-8 relative). On the H200 the precise exp gave
// log_normal_ in half and bfloat16 0.97x torch's CUDA kernel, the fast exp
// 0.99x and 1.0x. The fast exp flushes float subnormals to 0, which
// bfloat keeps: arguments under -80 are raised by 32 ln 2 and their
// result scaled by 2**-32, exactly.
template <typename T>
struct log_normal_math {
  static float exp(float x) { return metal::exp(x); }
  static mps_ops::normal_pair normals(float u1, float u2) { return mps_ops::box_muller(u1, u2); }
};
struct narrow_log_normal_math {
  static float exp(float x) {
    const bool subnormal = x < -80.0f;
    return fast::exp(subnormal ? x + 22.18070977791825f : x) * (subnormal ? 0x1p-32f : 1.0f);
  }
  static mps_ops::normal_pair normals(float u1, float u2) { return mps_ops::box_muller_fast_angle(u1, u2); }
};
template <> struct log_normal_math<half> : narrow_log_normal_math {};
template <> struct log_normal_math<bfloat> : narrow_log_normal_math {};

struct four_draws {
  float value[4];
};

// One thread's part: for each of its Philox blocks, draw(block, p) makes 4
// values, stored at their elements a grid apart, until the tensor's end.
template <typename T, typename Draw>
inline void fill_thread(device T* out, constant int* key, constant mps_ops::random_fill_params& params,
                        uint index, Draw draw) {
  const mps_ops::random_fill_params p = params;  // read once: the stores could alias it
  const mps_ops::philox_cipher cipher = mps_ops::read_cipher(key);
  const uint threads = mps_ops::random_fill_threads(p.numel);
  constexpr uint blocks = mps_ops::random_fill_elements / 4;
  _Pragma("clang loop unroll(full)")
  for (uint b = 0; b < blocks; ++b) {
    const four_draws drawn = draw(cipher.block(index, b), p);
    _Pragma("clang loop unroll(full)")
    for (uint m = 0; m < 4; ++m) {
      const uint element = index + (4 * b + m) * threads;
      if (element >= p.numel) {
        return;  // the thread's later elements lie further on
      }
      out[element] = stored_as<T>::from(drawn.value[m]);
    }
  }
}

struct cauchy_draw {
  four_draws operator()(mps_ops::philox_block block, mps_ops::random_fill_params p) const {
    four_draws out;
    for (uint m = 0; m < 4; ++m) {
      // u - 1/2 is exact: u is an odd multiple of 2**-24.
      const float u = mps_ops::open_unit_float(block.word[m]);
      out.value[m] = p.location + p.scale * mps_ops::tan_half_turns(u - 0.5f);
    }
    return out;
  }
};

template <typename T>
struct log_normal_draw {
  four_draws operator()(mps_ops::philox_block block, mps_ops::random_fill_params p) const {
    four_draws out;
    for (uint pair = 0; pair < 2; ++pair) {
      const mps_ops::normal_pair drawn = log_normal_math<T>::normals(
          mps_ops::open_unit_float(block.word[2 * pair]), mps_ops::open_unit_float(block.word[2 * pair + 1]));
      out.value[2 * pair] = log_normal_math<T>::exp(p.location + p.scale * drawn.first);
      out.value[2 * pair + 1] = log_normal_math<T>::exp(p.location + p.scale * drawn.second);
    }
    return out;
  }
};

struct geometric_draw {
  four_draws operator()(mps_ops::philox_block block, mps_ops::random_fill_params p) const {
    four_draws out;
    for (uint m = 0; m < 4; ++m) {
      out.value[m] = ceil(log(mps_ops::open_unit_float(block.word[m])) * p.scale);
    }
    return out;
  }
};

}  // namespace

template <typename T>
kernel void cauchy(device T* out [[buffer(0)]],
                   constant int* key [[buffer(1)]],
                   constant mps_ops::random_fill_params& params [[buffer(2)]],
                   uint index [[thread_position_in_grid]]) {
  fill_thread(out, key, params, index, cauchy_draw{});
}

template <typename T>
kernel void log_normal(device T* out [[buffer(0)]],
                       constant int* key [[buffer(1)]],
                       constant mps_ops::random_fill_params& params [[buffer(2)]],
                       uint index [[thread_position_in_grid]]) {
  fill_thread(out, key, params, index, log_normal_draw<T>{});
}

template <typename T>
kernel void geometric(device T* out [[buffer(0)]],
                      constant int* key [[buffer(1)]],
                      constant mps_ops::random_fill_params& params [[buffer(2)]],
                      uint index [[thread_position_in_grid]]) {
  fill_thread(out, key, params, index, geometric_draw{});
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, cauchy, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, log_normal, dense)
MPS_OPS_FOR_INTEGRAL(MPS_OPS_INSTANTIATE_FOR_TYPE, geometric, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, geometric, dense)
