// Pairwise p-norm distances between the rows of an (n, m) matrix
// (_pdist_forward) and their gradient (_pdist_backward; cdist's, between
// the rows of two matrices, _cdist_backward, at the end), in the CPU's pair
// order (0,1), (0,2), ..., (1,2), ... and with its special cases: p = 0
// counts differing elements, p = inf takes the largest difference.
// Forward: `share` threads per pair (row_threads on the host: several pairs
// per threadgroup, merged by shuffles where share fits a SIMD group),
// reducing over the m columns; one threadgroup per pair left an H200 at
// 0.54x torch on (4096, 256), each thread loading one column pair and then
// waiting on two barriers, which an Apple GPU pays the same way. Backward:
// one thread per (row, column), summing over the other rows, so every
// gradient element is written once (no atomics).
#include <metal_stdlib>
#include <mps_ops/reduction.h>

#include "pdist_params.h"
using namespace metal;

namespace {

// First pair index of row i: pairs (i, i+1 .. n-1) follow those of rows < i.
inline long row_start(long i, long n) {
  return i * (2 * n - i - 1) / 2;
}

// The pair (i, j), i < j, at position k: a float estimate of i, then exact
// integer correction.
inline void pair_of(long k, long n, thread long& i, thread long& j) {
  const float half_n = float(n) - 0.5f;
  i = long(half_n - sqrt(half_n * half_n - 2.0f * float(k) - 1.0f));
  i = i < 0 ? 0 : (i > n - 2 ? n - 2 : i);
  while (i > 0 && row_start(i, n) > k) {
    --i;
  }
  while (i < n - 2 && row_start(i + 1, n) <= k) {
    ++i;
  }
  j = k - row_start(i, n) + i + 1;
}

// One column's share of the distance: |d|^p (p = 0: d != 0, NaN kept as the
// CPU's min(ceil(|d|), 1) keeps it; p = inf: |d|).
inline float distance_term(float d, float p) {
  const float a = abs(d);
  if (p == 0.0f) {
    return isnan(a) ? a : (a != 0.0f ? 1.0f : 0.0f);
  }
  if (p == 1.0f || isinf(p)) {
    return a;
  }
  if (p == 2.0f) {
    return a * a;
  }
  return pow(a, p);
}

// The CPU's sign: NaN for NaN.
inline float sign_of(float d) {
  return isnan(d) ? d : (d > 0.0f ? 1.0f : (d < 0.0f ? -1.0f : 0.0f));
}

// d(dist)/d(diff) times the incoming gradient, as the CPU's backward has it.
inline float distance_gradient(float diff, float grad, float dist, float p) {
  if (p == 0.0f) {
    return 0.0f;
  }
  if (p == 1.0f) {
    return grad * sign_of(diff);
  }
  if (isinf(p)) {
    // Whether this difference is the largest: NaN where |diff| - dist is
    // (an infinite difference at an infinite distance), as the CPU's
    // 1 - min(1, ceil(||diff| - dist|)).
    const float gap = abs(diff) - dist;
    return grad * sign_of(diff) * (isnan(gap) ? gap : (gap == 0.0f ? 1.0f : 0.0f));
  }
  if (p < 2.0f) {
    return (dist == 0.0f || (diff == 0.0f && p < 1.0f))
               ? 0.0f
               : sign_of(diff) * pow(abs(diff), p - 1.0f) * grad / pow(dist, p - 1.0f);
  }
  if (p == 2.0f) {
    return dist == 0.0f ? 0.0f : grad * diff / dist;
  }
  return dist == 0.0f ? 0.0f : diff * pow(abs(diff), p - 2.0f) * grad / pow(dist, p - 1.0f);
}

}  // namespace

// T is float, the one dtype the CPU computes pdist in besides double.
// A thread loads its columns first, first + share, ... a run at a time
// (several loads in flight, as the element-wise kernels); the last group's
// threads past the last pair fold nothing but still merge.
template <typename T>
kernel void pdist_forward(
    device T* out [[buffer(0)]],
    constant T* self [[buffer(1)]],
    constant mps_ops::pdist_params& params [[buffer(2)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup float partials[32];
  mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const uint share = params.share;
  const long k = long(group.y) * long(at.size / share) + long(at.index / share);
  const long first = long(at.index % share), m = params.m;
  const bool active = k < params.pairs;
  const float p = params.p;
  float acc = 0.0f;
  if (active) {
    long i, j;
    pair_of(k, params.n, i, j);
    constant T* a = self + i * m;
    constant T* b = self + j * m;
    constexpr long run = long(mps_ops::elements_per_thread(sizeof(T)));
    for (long start = first; start < m; start += run * long(share)) {
      float differences[run];
      _Pragma("clang loop unroll(full)")
      for (long r = 0; r < run; ++r) {
        const long c = start + r * long(share);
        differences[r] = c < m ? float(a[c]) - float(b[c]) : 0.0f;  // a zero adds nothing, for every p
      }
      _Pragma("clang loop unroll(full)")
      for (long r = 0; r < run; ++r) {
        const float term = distance_term(differences[r], p);
        acc = isinf(p) ? mps_ops::nan_max(acc, term) : acc + term;
      }
    }
  }
  // Every thread of the group takes the same branch: p is uniform.
  if (isinf(p)) {
    acc = mps_ops::merge_consecutive<mps_ops::float_max>(acc, partials, at, share);
  } else {
    acc = mps_ops::merge_consecutive<mps_ops::float_sum>(acc, partials, at, share);
  }
  if (active && first == 0) {
    if (p == 0.0f || p == 1.0f || isinf(p)) {
      out[k] = acc;
    } else if (p == 2.0f) {
      out[k] = sqrt(acc);
    } else {
      out[k] = pow(acc, 1.0f / p);
    }
  }
}

template <typename T>
kernel void pdist_backward(
    device T* grad_self [[buffer(0)]],
    constant T* grad [[buffer(1)]],
    constant T* self [[buffer(2)]],
    constant T* dist [[buffer(3)]],
    constant mps_ops::pdist_params& params [[buffer(4)]],
    uint2 pos [[thread_position_in_grid]]) {
  const long c = long(pos.x), i = long(pos.y), n = params.n, m = params.m;
  const float x = self[i * m + c];
  float sum = 0.0f;
  for (long other = 0; other < n; ++other) {
    if (other == i) {
      continue;
    }
    // The pair's gradient is odd in the difference: row i's share is the
    // same function of x_i - x_other whichever row comes first.
    const long k = other > i ? row_start(i, n) + other - i - 1 : row_start(other, n) + i - other - 1;
    sum += distance_gradient(x - self[other * m + c], grad[k], dist[k], params.p);
  }
  grad_self[i * m + c] = sum;
}

// _cdist_backward: x1's gradient, one thread per (column c, row i, batch
// b), summing over x2's rows j in order (the CPU's), each pair's distance
// and incoming gradient read from cdist and grad, (batch, r1, r2); x1 and x2
// (batch, r1 or r2, m), every operand contiguous (the host expands the
// batch dims).
template <typename T>
kernel void cdist_backward(
    device T* grad_x1 [[buffer(0)]],
    constant T* grad [[buffer(1)]],
    constant T* x1 [[buffer(2)]],
    constant T* x2 [[buffer(3)]],
    constant T* dist [[buffer(4)]],
    constant mps_ops::cdist_params& params [[buffer(5)]],
    uint3 pos [[thread_position_in_grid]]) {
  const long c = long(pos.x), i = long(pos.y), b = long(pos.z), m = params.m, r2 = params.r2;
  const long row = b * params.r1 + i;
  const float x = x1[row * m + c];
  constant T* other = x2 + b * r2 * m + c;
  constant T* pair_grad = grad + row * r2;
  constant T* pair_dist = dist + row * r2;
  float sum = 0.0f;
  for (long j = 0; j < r2; ++j) {
    sum += distance_gradient(x - float(other[j * m]), pair_grad[j], pair_dist[j], params.p);
  }
  grad_x1[row * m + c] = sum;
}

MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(pdist_forward, reduce, float, float), pdist_forward, float)
MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(cdist_backward, dense, float, float), cdist_backward, float)
MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(pdist_backward, dense, float, float), pdist_backward, float)
