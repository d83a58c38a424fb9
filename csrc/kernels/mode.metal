// torch.mode along one dim: per slice, the most frequent value; among equally
// frequent values the smallest; its index is that of its last occurrence, as
// the CPU's sort-then-scan gives. A NaN equals nothing, so each NaN counts
// once (as in the CPU's scan) and ranks after every number (where torch.sort
// puts NaN): an all-NaN slice gives NaN at its first index. Threads meet
// slices as in every reduction (reduction.h); each thread counts the
// occurrences of its share of the elements (O(n^2) per slice: meant for the
// slice lengths mode is used on, not for huge ones).
#include <metal_stdlib>
#include <mps_ops/reduction.h>
using namespace metal;

template <typename In>
struct mode_reducer {
  using T = mps_ops::opmath_t<In>;
  struct state {
    int count;  // 0 only in the identity, which every element beats
    T value;
    long index;
  };
  static state identity() { return state{0, T(0), -1}; }
  static state merge(state a, state b) {
    if (a.count != b.count) {
      return a.count > b.count ? a : b;
    }
    const bool a_nan = a.value != a.value, b_nan = b.value != b.value;  // NaN: unequal to itself
    if (a_nan && b_nan) {
      return a.index < b.index ? a : b;
    }
    if (a_nan != b_nan) {
      return b_nan ? a : b;
    }
    if (a.value != b.value) {
      return a.value < b.value ? a : b;
    }
    return a.index > b.index ? a : b;
  }
  static state shuffle_xor(state s, ushort mask) {
    return state{mps_ops::shuffle_xor(s.count, mask), mps_ops::shuffle_xor(s.value, mask),
                 mps_ops::shuffle_xor(s.index, mask)};
  }
};

// Counts the elements equal to `value` (for a NaN: none), as a fold for
// mps_ops::fold_elements.
template <typename T>
struct count_equal {
  struct state {
    T value;
    int count;
  };
  static state fold(state s, T v) {
    s.count += v == s.value ? 1 : 0;
    return s;
  }
};

template <typename T>
kernel void mode(
    device T* values [[buffer(0)]],
    device long* indices [[buffer(1)]],
    constant T* in [[buffer(2)]],
    constant mps_ops::reduction_layout& layout [[buffer(3)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  using reducer = mode_reducer<T>;
  using counter = count_equal<typename reducer::T>;
  threadgroup typename reducer::state partials[mps_ops::partial_states];
  mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const mps_ops::slice_thread t = mps_ops::place_thread(layout, group.y, at);
  typename reducer::state best = reducer::identity();
  if (t.active) {
    const ulong start = mps_ops::slice_offset<ulong>(layout, uint(t.slice)), n = ulong(layout.inner_numel);
    for (ulong i = t.first; i < n; i += t.step) {
      const auto value = static_cast<typename reducer::T>(in[start + mps_ops::reduced_offset(layout, i)]);
      int count = mps_ops::fold_elements<counter>(typename counter::state{value, 0}, in, layout, start, ulong(0), n, 1u).count;
      count = count == 0 ? 1 : count;  // a NaN: itself once
      best = reducer::merge(best, typename reducer::state{count, value, long(i)});
    }
  }
  best = mps_ops::merge_slice<reducer>(best, partials, layout, at);
  if (mps_ops::finishes_slice(t)) {
    values[t.slice] = static_cast<T>(best.value);
    indices[t.slice] = best.index;
  }
}

MPS_OPS_FOR_ALL_BUT_WIDE_UNSIGNED(MPS_OPS_INSTANTIATE_FOR_TYPE, mode, reduce)
