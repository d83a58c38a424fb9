// isin(elements, test_elements): whether each element equals some test
// element (==, so NaN is in nothing and -0.0 finds 0.0), inverted on request.
// One thread per element. A few test elements are scanned; more are sorted
// on the host (torch's own sort) and binary-searched.
#include <metal_stdlib>
#include <mps_ops/dtype_sets.h>
#include <mps_ops/instantiate.h>

#include "isin_params.h"
using namespace metal;

namespace mps_ops {

template <typename T>
inline bool unordered(T v) {
  return !(v == v);
}

// The first index in [lo, hi) whose value is not below x (hi if none): the
// ordered values, which a NaN (never below x) would make non-monotone.
template <typename T>
inline uint first_not_below(constant T* tests, uint lo, uint hi, T x) {
  while (lo < hi) {
    const uint mid = lo + (hi - lo) / 2;
    if (tests[mid] < x) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The end of a run of NaNs at the start of tests[0, m) (0 if none).
template <typename T>
inline uint nans_first(constant T* tests, uint m) {
  uint lo = 0, hi = m;
  while (lo < hi) {
    const uint mid = lo + (hi - lo) / 2;
    if (unordered(tests[mid])) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The start of a run of NaNs at the end of tests[0, m) (m if none).
template <typename T>
inline uint nans_last(constant T* tests, uint m) {
  uint lo = 0, hi = m;
  while (lo < hi) {
    const uint mid = lo + (hi - lo) / 2;
    if (unordered(tests[mid])) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// x among sorted test elements. A sort groups NaNs at one end: the CPU's
// sort puts them last, torch's CUDA sort of bfloat16 values was seen to put
// them first (H200, torch 2.11); the search runs between them.
template <typename T>
inline bool in_sorted(constant T* tests, uint m, T x) {
  const uint lo = unordered(tests[0]) ? nans_first(tests, m) : 0;
  const uint hi = unordered(tests[m - 1]) ? nans_last(tests, m) : m;
  const uint at = first_not_below(tests, lo, hi, x);
  return at < hi && tests[at] == x;
}

template <typename T>
kernel void isin_dense(
    device bool* out [[buffer(0)]],
    constant T* elements [[buffer(1)]],
    constant T* tests [[buffer(2)]],
    constant isin_params& p [[buffer(3)]],
    uint i [[thread_position_in_grid]]) {
  if (i >= p.count) {
    return;
  }
  const T x = elements[i];
  bool found = false;
  if (p.sorted != 0) {
    found = in_sorted(tests, p.tests, x);
  } else {
    for (uint k = 0; k < p.tests && !found; ++k) {
      found = tests[k] == x;
    }
  }
  out[i] = found != (p.invert != 0);
}

}  // namespace mps_ops

#define REGISTER_ISIN(OP, T) MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(OP, dense, T, T), mps_ops::isin_dense, T)

MPS_OPS_FOR_INTEGRAL(REGISTER_ISIN, isin)
MPS_OPS_FOR_FLOATING(REGISTER_ISIN, isin)
