// Tensor.index_reduce_ (a fill for torch 2.9 to 2.11, whose MPS backend
// lacks it; index_reduce and its out= form reach the same kernel): along
// dim, result[..., index[k], ...] = reduce(result[..., index[k], ...],
// source[..., k, ...]) for k in order, reduce one of prod, mean, amax and
// amin; without include_self a target's own value is left out.
//
// As the CPU's serial loop: the host sorts keys index * count + k (one
// sort, in index order within a target whether or not the device's sort is
// stable); a thread per result element finds its target's run by binary
// search and combines the run's source values in k order: float32 and the
// integers (wrapping) step for step as the CPU, bit for bit; half and
// bfloat16 in float, rounded once, where the CPU rounds every step. mean
// divides by the count (integers: wrapped to the dtype, floor division, as
// the CPU's counts tensor and div_(counts, "floor")). An index outside [0,
// size(dim)) shows at the sorted keys' ends: the kernel raises
// out_of_range (the CPU's IndexError) and writes nothing.
#include <metal_stdlib>
#include <mps_ops/dtype_sets.h>
#include <mps_ops/instantiate.h>
#include <mps_ops/types.h>

#include "index_reduce_params.h"
using namespace metal;

namespace {

// The first of `count` sorted keys not below `value`.
inline long lower_bound(constant long* keys, long count, long value) {
  long low = 0, high = count;
  while (low < high) {
    const long middle = low + (high - low) / 2;
    if (keys[middle] < value) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

// One step of each reduction in the accumulator type T: float (for half
// and bfloat16 too), or an integer type wrapping (through its unsigned
// type: signed overflow is undefined).
template <typename T>
struct reduction_step {
  static T prod(T a, T b) { return a * b; }
  static T add(T a, T b) { return a + b; }
  // torch.maximum's and minimum's: NaN wins; otherwise std::max's and
  // std::min's choice between equals (-0 and +0: the first).
  static T larger(T a, T b) {
    return isnan(a) || isnan(b) ? a + b : (a < b ? b : a);
  }
  static T smaller(T a, T b) {
    return isnan(a) || isnan(b) ? a + b : (b < a ? b : a);
  }
  static T lowest() { return -numeric_limits<T>::infinity(); }
  static T highest() { return numeric_limits<T>::infinity(); }
  static T mean(T sum, T count) { return sum / count; }
  static T count(long n) { return T(n); }
};

template <typename T, typename U>
struct integer_step {
  static T prod(T a, T b) { return T(U(a) * U(b)); }
  static T add(T a, T b) { return T(U(a) + U(b)); }
  static T larger(T a, T b) { return a < b ? b : a; }
  static T smaller(T a, T b) { return b < a ? b : a; }
  static T lowest() { return numeric_limits<T>::lowest(); }
  static T highest() { return numeric_limits<T>::max(); }
  static T count(long n) { return T(U(n)); }
  // Floor division (the CPU's div_(counts, "floor")); a count the dtype
  // wrapped to 0 counts 1, as the CPU's masked_fill_(counts == 0, 1) makes it.
  static T mean(T sum, T count) {
    if (count == T(0)) {
      return sum;
    }
    const T quotient = sum / count;
    return (sum % count != T(0) && ((sum < T(0)) != (count < T(0)))) ? T(quotient - T(1)) : quotient;
  }
};
template <>
struct reduction_step<uchar> : integer_step<uchar, uint> {};
template <>
struct reduction_step<char> : integer_step<char, uint> {};
template <>
struct reduction_step<short> : integer_step<short, uint> {};
template <>
struct reduction_step<int> : integer_step<int, uint> {};
template <>
struct reduction_step<long> : integer_step<long, ulong> {};

}  // namespace

template <typename T>
kernel void index_reduce(
    device T* result [[buffer(0)]],
    constant T* source [[buffer(1)]],
    constant long* keys [[buffer(2)]],
    device int* out_of_range [[buffer(3)]],
    constant mps_ops::index_reduce_params& p [[buffer(4)]],
    uint position [[thread_position_in_grid]]) {
  if (long(position) >= p.numel) {
    return;
  }
  const long count = p.count;
  if (keys[0] < 0 || keys[count - 1] >= p.sizes[p.dim] * count) {
    *out_of_range = 1;
    return;
  }
  // The result element's coordinates: its offset, its target j along dim
  // and its source slice's offset.
  uint rest = position;
  long result_offset = 0, source_offset = 0, target = 0;
  for (int d = p.ndim - 1; d >= 0; --d) {
    long coordinate = long(rest);
    if (d > 0) {
      coordinate = long(rest % uint(p.sizes[d]));
      rest /= uint(p.sizes[d]);
    }
    result_offset += coordinate * p.result_strides[d];
    if (d == p.dim) {
      target = coordinate;
    } else {
      source_offset += coordinate * p.source_strides[d];
    }
  }
  const long first = lower_bound(keys, count, target * count);
  const long end = lower_bound(keys, count, (target + 1) * count);
  if (first == end) {
    return;
  }
  using A = mps_ops::opmath_t<T>;
  using S = reduction_step<A>;
  const int reduce = p.reduce;
  A value = A(result[result_offset]);
  if (p.include_self == 0) {
    value = reduce == mps_ops::index_reduce_prod   ? A(1)
            : reduce == mps_ops::index_reduce_amax ? S::lowest()
            : reduce == mps_ops::index_reduce_amin ? S::highest()
                                                   : A(0);
  }
  const long dim_stride = p.source_strides[p.dim];
  for (long at = first; at < end; ++at) {
    const A v = A(source[source_offset + (keys[at] - target * count) * dim_stride]);
    value = reduce == mps_ops::index_reduce_prod   ? S::prod(value, v)
            : reduce == mps_ops::index_reduce_amax ? S::larger(value, v)
            : reduce == mps_ops::index_reduce_amin ? S::smaller(value, v)
                                                   : S::add(value, v);
  }
  if (reduce == mps_ops::index_reduce_mean) {
    value = S::mean(value, S::count(end - first + p.include_self));
  }
  result[result_offset] = T(value);
}

MPS_OPS_FOR_INTEGRAL(MPS_OPS_INSTANTIATE_FOR_TYPE, index_reduce, dense)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, index_reduce, dense)
