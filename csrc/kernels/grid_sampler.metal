// grid_sampler_2d_backward and grid_sampler_3d_backward (fill ops for torch
// 2.9 to 2.12, where the gradient of torch.nn.functional.grid_sample raised
// on a Mac; the host stub in csrc/operations/grid_sampler.mm; the 3-D
// kernel at the end). One thread per output point (n, h, w):
// its grid coordinates become source coordinates (unnormalised, then
// clipped or reflected by the padding mode, each step's derivative kept),
// and a loop over the channels adds grad_output's share into every input
// element the point sampled (atomically: points share elements) and sums
// the point's grid gradient from the input values around it, in the order
// the CPU's kernel has: bilinear (four neighbours), nearest (one, no grid
// gradient) and bicubic (sixteen, each tap's coordinate padded on its own).
// grad_input accumulates in float (half and bfloat16 too: the host converts
// once), so a sum rounds once per add in float, not in the input's type.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include "grid_sampler_params.h"
using namespace metal;

namespace {

// The grid's [-1, 1] to pixel coordinates, and d(pixel)/d(grid), rounded as
// the CPU's vectorised code rounds them: c + 1, then one fma with the scale
// and -0.5 (0 where the corners are aligned). Where the exact coordinate
// lies within an ulp of a pixel, which side it rounds to decides the
// bilinear grid gradient (the slope of one neighbour pair or the other):
// identity grids from affine_grid put points there. Matched on 7,018
// identity and random points of widths 2 to 59; c * scale + (size - 1) / 2
// in one fma took the other side for 21 of an 11 x 11 identity grid's
// points, and (c + 1) * scale - 0.5 unfused for 25 of the 7,018.
inline float unnormalize(float coord, long size, bool align_corners, thread float& grad) {
  grad = align_corners ? float(size - 1) / 2.0f : float(size) / 2.0f;
  return fma(coord + 1.0f, grad, align_corners ? 0.0f : -0.5f);
}

// Into [0, size - 1], with the derivative (0 where clipped; a NaN passes).
inline float clip(float in, long size, thread float& grad) {
  if (in <= 0.0f) {
    grad = 0.0f;
    return 0.0f;
  }
  const float high = float(size - 1);
  if (in >= high) {
    grad = 0.0f;
    return high;
  }
  grad = 1.0f;
  return in;
}

// Reflected into [twice_low / 2, twice_high / 2], with the derivative (+-1).
inline float reflect(float in, long twice_low, long twice_high, thread float& grad) {
  if (twice_low == twice_high) {
    grad = 0.0f;
    return 0.0f;
  }
  const float low = float(twice_low) / 2.0f, span = float(twice_high - twice_low) / 2.0f;
  in -= low;
  float sign = 1.0f;
  if (in < 0.0f) {
    sign = -1.0f;
    in = -in;
  }
  const float extra = fmod(in, span);
  // The parity of the flips in float: no integer conversion of a huge or
  // non-finite quotient (a NaN takes the odd branch and stays NaN).
  const bool even = fmod(floor(in / span), 2.0f) == 0.0f;
  grad = even ? sign : -sign;
  return even ? extra + low : span - extra + low;
}

// A pixel coordinate under the padding mode (clipped, or reflected then
// clipped), and the derivative of that step (1 with zeros padding).
template <typename Params>
inline float padded(float in, long size, thread const Params& p, thread float& grad) {
  grad = 1.0f;
  if (p.padding == mps_ops::grid_pad_zeros) {
    return in;
  }
  float reflected = 1.0f, clipped = 1.0f;
  if (p.padding == mps_ops::grid_pad_reflection) {
    in = p.align_corners != 0 ? reflect(in, 0, 2 * (size - 1), reflected) : reflect(in, -1, 2 * size - 1, reflected);
  }
  in = clip(in, size, clipped);
  grad = reflected * clipped;
  return in;
}

// A grid coordinate's source coordinate for bilinear and nearest sampling,
// and its derivative. (Bicubic pads each tap on its own, without one: the
// taps' weights carry the derivative.)
inline float source_index(float coord, long size, thread const mps_ops::grid_sampler_params& p, thread float& grad) {
  float step = 1.0f;
  const float in = padded(unnormalize(coord, size, p.align_corners != 0, grad), size, p, step);
  grad *= step;
  return in;
}

// The same for 3-D grids, whose CPU kernel is scalar C++: it unnormalises
// as ((c + 1) / 2) x (size - 1) with aligned corners, else
// ((c + 1) x size - 1) / 2, each operation rounded.
inline float source_index_3d(float coord, long size, thread const mps_ops::grid_sampler_3d_params& p,
                             thread float& grad) {
  float unnormalized = 0.0f;
  if (p.align_corners != 0) {
    grad = float(size - 1) / 2.0f;
    unnormalized = ((coord + 1.0f) / 2.0f) * float(size - 1);
  } else {
    grad = float(size) / 2.0f;
    unnormalized = ((coord + 1.0f) * float(size) - 1.0f) / 2.0f;
  }
  float step = 1.0f;
  const float in = padded(unnormalized, size, p, step);
  grad *= step;
  return in;
}

// A tap's place in an input plane: its offset (32-bit: the host keeps a
// plane under 2**32 elements), and whether it lies in the plane, tested in
// float before any integer conversion (false for NaN). Found once per
// point, not per channel: the channel loop reuses it. (Measured on an H200,
// that alone did not move float32 off 0.77x torch's CUDA kernel.)
struct tap {
  uint offset;
  bool inside;
};

inline tap tap_at(float x, float y, long w, long h) {
  const bool inside = x >= 0.0f && x < float(w) && y >= 0.0f && y < float(h);
  return tap{inside ? uint(y) * uint(w) + uint(x) : 0u, inside};
}

inline void add_to(device float* plane, tap t, float value) {
  if (t.inside) {
    atomic_fetch_add_explicit(reinterpret_cast<device atomic<float>*>(plane + t.offset), value, memory_order_relaxed);
  }
}

// A 3-D tap: its offset in a (D, H, W) volume (the host keeps one under
// 2**32 elements).
inline tap tap_at_3d(float x, float y, float z, long w, long h, long d) {
  const bool inside = x >= 0.0f && x < float(w) && y >= 0.0f && y < float(h) && z >= 0.0f && z < float(d);
  return tap{inside ? (uint(z) * uint(h) + uint(y)) * uint(w) + uint(x) : 0u, inside};
}

template <typename T>
inline float value_at(constant T* plane, tap t) {
  return t.inside ? float(plane[t.offset]) : 0.0f;
}

// The cubic convolution's four weights at fraction t (A = -0.75, as
// torch's), and their derivatives in t.
constant constexpr float cubic_a = -0.75f;
inline float cubic_near(float x) {
  return ((cubic_a + 2.0f) * x - (cubic_a + 3.0f)) * x * x + 1.0f;
}
inline float cubic_far(float x) {
  return ((cubic_a * x - 5.0f * cubic_a) * x + 8.0f * cubic_a) * x - 4.0f * cubic_a;
}
inline float cubic_near_slope(float x) {
  return (3.0f * (cubic_a + 2.0f) * x - 2.0f * (cubic_a + 3.0f)) * x;
}
inline float cubic_far_slope(float x) {
  return (3.0f * cubic_a * x - 10.0f * cubic_a) * x + 8.0f * cubic_a;
}
inline void cubic_weights(float t, thread float* w, thread float* slope) {
  w[0] = cubic_far(t + 1.0f);
  w[1] = cubic_near(t);
  w[2] = cubic_near(1.0f - t);
  w[3] = cubic_far(2.0f - t);
  slope[0] = cubic_far_slope(t + 1.0f);
  slope[1] = cubic_near_slope(t);
  slope[2] = -cubic_near_slope(1.0f - t);
  slope[3] = -cubic_far_slope(2.0f - t);
}

}  // namespace

// One kernel per interpolation (Mode): in one kernel, bicubic's sixteen
// taps held every mode at 53 registers and a 160-byte stack frame (CUDA
// target); split, bilinear float32 takes 50 and no stack. A GPU keeps fewer threads
// in flight the more registers each holds, Apple's as NVIDIA's. (On the
// H200 bilinear float32 stayed at 0.77x torch's CUDA kernel: the split is
// not what limits it there. The CUDA target's atomics were: on generic
// addresses, as metal_atomic.h says; on global ones, 1.0x.)
template <int Mode, typename T>
kernel void grid_sampler_2d_backward(device float* grad_input [[buffer(0)]],
                                     device T* grad_grid [[buffer(1)]],
                                     constant T* grad_output [[buffer(2)]],
                                     constant T* input [[buffer(3)]],
                                     constant T* grid [[buffer(4)]],
                                     constant mps_ops::grid_sampler_params& params [[buffer(5)]],
                                     uint index [[thread_position_in_grid]]) {
  // In registers: read through the reference, the channel count was loaded
  // again after every atomic add (which may alias it on a target of generic
  // pointers, CUDA's), a dependent load per channel.
  const mps_ops::grid_sampler_params p = params;
  // The host keeps batch x points under 2**32.
  const uint points = uint(p.out_h * p.out_w);
  const uint n = index / points;
  if (long(n) >= p.batch) {
    return;
  }
  const long in_plane = p.in_h * p.in_w;
  constant T* at = grid + long(index) * 2;
  float gx_mult = 0.0f, gy_mult = 0.0f;
  float gx = 0.0f, gy = 0.0f;
  constant T* out_grad = grad_output + long(n) * p.channels * long(points) + (index - n * points);
  constant T* in = input + long(n) * p.channels * in_plane;
  device float* in_grad = grad_input + long(n) * p.channels * in_plane;
  const bool want_input = p.want_input != 0;
  if (Mode == mps_ops::grid_bicubic) {
    const float ix = unnormalize(float(at[0]), p.in_w, p.align_corners != 0, gx_mult);
    const float iy = unnormalize(float(at[1]), p.in_h, p.align_corners != 0, gy_mult);
    const float x0 = floor(ix) - 1.0f, y0 = floor(iy) - 1.0f;
    float wx[4], sx[4], wy[4], sy[4];
    cubic_weights(ix - floor(ix), wx, sx);
    cubic_weights(iy - floor(iy), wy, sy);
    tap taps[16];
    float unused = 0.0f;
    _Pragma("clang loop unroll(full)")
    for (int i = 0; i < 4; ++i) {
      const float y = padded(y0 + float(i), p.in_h, p, unused);
      _Pragma("clang loop unroll(full)")
      for (int j = 0; j < 4; ++j) {
        taps[i * 4 + j] = tap_at(padded(x0 + float(j), p.in_w, p, unused), y, p.in_w, p.in_h);
      }
    }
    for (long c = 0; c < p.channels; ++c, out_grad += points, in += in_plane, in_grad += in_plane) {
      const float g = float(*out_grad);
      _Pragma("clang loop unroll(full)")
      for (int i = 0; i < 4; ++i) {
        _Pragma("clang loop unroll(full)")
        for (int j = 0; j < 4; ++j) {
          const tap t = taps[i * 4 + j];
          const float v = value_at(in, t);
          if (want_input) {
            add_to(in_grad, t, g * wx[j] * wy[i]);
          }
          gx += v * sx[j] * wy[i] * g;
          gy += v * wx[j] * sy[i] * g;
        }
      }
    }
  } else {
    const float ix = source_index(float(at[0]), p.in_w, p, gx_mult);
    const float iy = source_index(float(at[1]), p.in_h, p, gy_mult);
    if (Mode == mps_ops::grid_nearest) {
      const tap t = tap_at(rint(ix), rint(iy), p.in_w, p.in_h);  // half to even, as the CPU's nearbyint
      for (long c = 0; want_input && c < p.channels; ++c, out_grad += points, in_grad += in_plane) {
        add_to(in_grad, t, float(*out_grad));
      }
      gx_mult = 0.0f;
      gy_mult = 0.0f;
    } else {
      const float x0 = floor(ix), y0 = floor(iy), x1 = x0 + 1.0f, y1 = y0 + 1.0f;
      const float west = x1 - ix, east = ix - x0, north = y1 - iy, south = iy - y0;
      const tap tnw = tap_at(x0, y0, p.in_w, p.in_h), tne = tap_at(x1, y0, p.in_w, p.in_h);
      const tap tsw = tap_at(x0, y1, p.in_w, p.in_h), tse = tap_at(x1, y1, p.in_w, p.in_h);
      for (long c = 0; c < p.channels; ++c, out_grad += points, in += in_plane, in_grad += in_plane) {
        // Loads before the adds: on a target of generic pointers (CUDA's)
        // an add may alias a later load, which then waits behind it.
        const float g = float(*out_grad);
        const float nw = value_at(in, tnw), ne = value_at(in, tne), sw = value_at(in, tsw), se = value_at(in, tse);
        if (want_input) {
          add_to(in_grad, tnw, west * north * g);
          add_to(in_grad, tne, east * north * g);
          add_to(in_grad, tsw, west * south * g);
          add_to(in_grad, tse, east * south * g);
        }
        // The CPU's (vectorised) grouping: differences of neighbours, so
        // an infinite gradient gives an infinity where four products of it
        // summed give inf - inf.
        gx += ((ne - nw) * north + (se - sw) * south) * g;
        gy += ((sw - nw) * west + (se - ne) * east) * g;
      }
    }
  }
  device T* out = grad_grid + long(index) * 2;
  out[0] = static_cast<T>(gx_mult * gx);
  out[1] = static_cast<T>(gy_mult * gy);
}

#define GRID_SAMPLER_INSTANTIATE(NAME, MODE, T) \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(NAME, dense, T, T), grid_sampler_2d_backward, MODE, T)
MPS_OPS_FOR_FLOATING(GRID_SAMPLER_INSTANTIATE, grid_sampler_2d_backward_bilinear, mps_ops::grid_bilinear)
MPS_OPS_FOR_FLOATING(GRID_SAMPLER_INSTANTIATE, grid_sampler_2d_backward_nearest, mps_ops::grid_nearest)
MPS_OPS_FOR_FLOATING(GRID_SAMPLER_INSTANTIATE, grid_sampler_2d_backward_bicubic, mps_ops::grid_bicubic)

// grid_sampler_3d_backward (a fill op for torch 2.9 to 2.12, whose MPS
// backends have the 3-D forward but not its gradient): one thread per
// output point (n, d, h, w), as the 2-D kernel, over the eight neighbours
// (trilinear; the CPU calls it bilinear) or the nearest one. The grid
// gradient's terms are the CPU's, in its order and grouping: per neighbour
// inside the input, its value times the two other axes' distances times
// grad_output (a neighbour outside adds nothing: its weights may be NaN or
// infinite where the point is).
template <int Mode, typename T>
kernel void grid_sampler_3d_backward(device float* grad_input [[buffer(0)]],
                                     device T* grad_grid [[buffer(1)]],
                                     constant T* grad_output [[buffer(2)]],
                                     constant T* input [[buffer(3)]],
                                     constant T* grid [[buffer(4)]],
                                     constant mps_ops::grid_sampler_3d_params& params [[buffer(5)]],
                                     uint index [[thread_position_in_grid]]) {
  // In registers (as the 2-D kernel's, which says why).
  const mps_ops::grid_sampler_3d_params p = params;
  // The host keeps batch x points under 2**32.
  const uint points = uint(p.out_d * p.out_h * p.out_w);
  const uint n = index / points;
  if (long(n) >= p.batch) {
    return;
  }
  const long in_volume = p.in_d * p.in_h * p.in_w;
  constant T* at = grid + long(index) * 3;
  float gx_mult = 0.0f, gy_mult = 0.0f, gz_mult = 0.0f;
  float gx = 0.0f, gy = 0.0f, gz = 0.0f;
  constant T* out_grad = grad_output + long(n) * p.channels * long(points) + (index - n * points);
  device float* in_grad = grad_input + long(n) * p.channels * in_volume;
  const bool want_input = p.want_input != 0;
  const float ix = source_index_3d(float(at[0]), p.in_w, p, gx_mult);
  const float iy = source_index_3d(float(at[1]), p.in_h, p, gy_mult);
  const float iz = source_index_3d(float(at[2]), p.in_d, p, gz_mult);
  if (Mode == mps_ops::grid_nearest) {
    // Half to even, as the CPU's nearbyint.
    const tap t = tap_at_3d(rint(ix), rint(iy), rint(iz), p.in_w, p.in_h, p.in_d);
    for (long c = 0; want_input && c < p.channels; ++c, out_grad += points, in_grad += in_volume) {
      add_to(in_grad, t, float(*out_grad));
    }
    gx_mult = 0.0f;
    gy_mult = 0.0f;
    gz_mult = 0.0f;
  } else {
    constant T* in = input + long(n) * p.channels * in_volume;
    const float x0 = floor(ix), y0 = floor(iy), z0 = floor(iz), x1 = x0 + 1.0f, y1 = y0 + 1.0f, z1 = z0 + 1.0f;
    // Distances to the far neighbour on each axis: west/east (x),
    // north/south (y), top/bottom (z).
    const float west = x1 - ix, east = ix - x0, north = y1 - iy, south = iy - y0, top = z1 - iz, bottom = iz - z0;
    const tap tnw = tap_at_3d(x0, y0, z0, p.in_w, p.in_h, p.in_d), tne = tap_at_3d(x1, y0, z0, p.in_w, p.in_h, p.in_d);
    const tap tsw = tap_at_3d(x0, y1, z0, p.in_w, p.in_h, p.in_d), tse = tap_at_3d(x1, y1, z0, p.in_w, p.in_h, p.in_d);
    const tap bnw = tap_at_3d(x0, y0, z1, p.in_w, p.in_h, p.in_d), bne = tap_at_3d(x1, y0, z1, p.in_w, p.in_h, p.in_d);
    const tap bsw = tap_at_3d(x0, y1, z1, p.in_w, p.in_h, p.in_d), bse = tap_at_3d(x1, y1, z1, p.in_w, p.in_h, p.in_d);
    for (long c = 0; c < p.channels; ++c, out_grad += points, in += in_volume, in_grad += in_volume) {
      const float g = float(*out_grad);
      if (want_input) {
        add_to(in_grad, tnw, west * north * top * g);
        add_to(in_grad, tne, east * north * top * g);
        add_to(in_grad, tsw, west * south * top * g);
        add_to(in_grad, tse, east * south * top * g);
        add_to(in_grad, bnw, west * north * bottom * g);
        add_to(in_grad, bne, east * north * bottom * g);
        add_to(in_grad, bsw, west * south * bottom * g);
        add_to(in_grad, bse, east * south * bottom * g);
      }
      if (tnw.inside) {
        const float v = float(in[tnw.offset]);
        gx -= v * north * top * g;
        gy -= v * west * top * g;
        gz -= v * west * north * g;
      }
      if (tne.inside) {
        const float v = float(in[tne.offset]);
        gx += v * north * top * g;
        gy -= v * east * top * g;
        gz -= v * east * north * g;
      }
      if (tsw.inside) {
        const float v = float(in[tsw.offset]);
        gx -= v * south * top * g;
        gy += v * west * top * g;
        gz -= v * west * south * g;
      }
      if (tse.inside) {
        const float v = float(in[tse.offset]);
        gx += v * south * top * g;
        gy += v * east * top * g;
        gz -= v * east * south * g;
      }
      if (bnw.inside) {
        const float v = float(in[bnw.offset]);
        gx -= v * north * bottom * g;
        gy -= v * west * bottom * g;
        gz += v * west * north * g;
      }
      if (bne.inside) {
        const float v = float(in[bne.offset]);
        gx += v * north * bottom * g;
        gy -= v * east * bottom * g;
        gz += v * east * north * g;
      }
      if (bsw.inside) {
        const float v = float(in[bsw.offset]);
        gx -= v * south * bottom * g;
        gy += v * west * bottom * g;
        gz += v * west * south * g;
      }
      if (bse.inside) {
        const float v = float(in[bse.offset]);
        gx += v * south * bottom * g;
        gy += v * east * bottom * g;
        gz += v * east * south * g;
      }
    }
  }
  device T* out = grad_grid + long(index) * 3;
  out[0] = static_cast<T>(gx_mult * gx);
  out[1] = static_cast<T>(gy_mult * gy);
  out[2] = static_cast<T>(gz_mult * gz);
}

#define GRID_SAMPLER_3D_INSTANTIATE(NAME, MODE, T) \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(NAME, dense, T, T), grid_sampler_3d_backward, MODE, T)
MPS_OPS_FOR_FLOATING(GRID_SAMPLER_3D_INSTANTIATE, grid_sampler_3d_backward_bilinear, mps_ops::grid_bilinear)
MPS_OPS_FOR_FLOATING(GRID_SAMPLER_3D_INSTANTIATE, grid_sampler_3d_backward_nearest, mps_ops::grid_nearest)
