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

// The first index in [0, m) whose value is not below x (m if none). torch's
// ascending sort puts NaNs last (its convention, which its
// test_sort_and_select.py holds each device to), and a NaN is never below
// x: the predicate stays monotone.
template <typename T>
inline uint first_not_below(constant T* tests, uint m, T x) {
  uint lo = 0, hi = m;
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
    const uint at = first_not_below(tests, p.tests, x);
    found = at < p.tests && tests[at] == x;
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
