// Barriers and SIMD-group functions on a CUDA warp. A threadgroup is a 1-D
// block (launch.h), so a SIMD group is a warp of consecutive thread indices,
// 32 wide as on Apple GPUs. Every function works on the lanes active at the
// call (__activemask): lanes that branched apart, or returned past a clipped
// group, take no part. Reductions and scans combine the lanes in lane order,
// one shuffle per lane, so that results match the emulator's bit for bit
// (a butterfly would be faster and round differently). Reading a lane that is
// not active is undefined here, as on Metal; the emulator gives poison.
#pragma once

#include <mps_ops_msl/simd_ops.h>

namespace mps_ops_cuda {

using ::mps_ops_msl::simd_width;

inline uint32_t active_lanes() { return __nvvm_activemask(); }
inline uint32_t lane_id() { return __nvvm_read_ptx_sreg_laneid(); }
inline uint32_t first_lane(uint32_t mask) { return uint32_t(__builtin_ctz(mask)); }

// shfl.sync's c operand: clamp lane 31 and no segments (idx, down, bfly),
// clamp lane 0 (up).
constexpr int shuffle_clamp_high = 0x1f;
constexpr int shuffle_clamp_low = 0;

enum class shuffle_op { index, up, down, xor_mask };

// One 32-bit word through shfl.sync.
template <shuffle_op Op>
inline uint32_t shuffle_word(uint32_t mask, uint32_t word, uint32_t argument) {
  const int w = int(word), a = int(argument);
  switch (Op) {
    case shuffle_op::index: return uint32_t(__nvvm_shfl_sync_idx_i32(mask, w, a, shuffle_clamp_high));
    case shuffle_op::up: return uint32_t(__nvvm_shfl_sync_up_i32(mask, w, a, shuffle_clamp_low));
    case shuffle_op::down: return uint32_t(__nvvm_shfl_sync_down_i32(mask, w, a, shuffle_clamp_high));
    case shuffle_op::xor_mask: return uint32_t(__nvvm_shfl_sync_bfly_i32(mask, w, a, shuffle_clamp_high));
  }
  return word;
}

// Any trivially copyable value, a word at a time (64-bit scalars, vectors,
// reducer states).
template <shuffle_op Op, class T>
inline T shuffle(uint32_t mask, const T& value, uint32_t argument) {
  constexpr unsigned words = (sizeof(T) + 3) / 4;
  uint32_t in[words] = {};
  __builtin_memcpy(in, &value, sizeof(T));
  uint32_t out[words];
  for (unsigned i = 0; i < words; ++i) out[i] = shuffle_word<Op>(mask, in[i], argument);
  T result;
  __builtin_memcpy(&result, out, sizeof(T));
  return result;
}

using ::mps_ops_msl::op_sum;
using ::mps_ops_msl::op_product;
using ::mps_ops_msl::op_min;
using ::mps_ops_msl::op_max;
using ::mps_ops_msl::op_and;
using ::mps_ops_msl::op_or;
using ::mps_ops_msl::op_xor;

// The first active lane's value, combined with each further active lane's in
// lane order: the emulator's resolve_reduce.
template <class T, class Op>
inline T reduce_in_lane_order(const T& value) {
  const uint32_t mask = active_lanes();
  const uint32_t first = first_lane(mask);
  T acc = shuffle<shuffle_op::index>(mask, value, first);
  for (uint32_t lane = first + 1; lane < simd_width; ++lane) {
    if ((mask >> lane) & 1u) acc = Op::apply(acc, shuffle<shuffle_op::index>(mask, value, lane));
  }
  return acc;
}

// The emulator's resolve_scan: from the identity, in lane order.
template <class T, class Op, bool Inclusive>
inline T scan_in_lane_order(const T& value) {
  const uint32_t mask = active_lanes();
  const uint32_t me = lane_id();
  T acc = Op::template identity<T>();
  T mine = acc;
  for (uint32_t lane = 0; lane < simd_width; ++lane) {
    if (!((mask >> lane) & 1u)) continue;
    const T v = shuffle<shuffle_op::index>(mask, value, lane);
    if (Inclusive) acc = Op::apply(acc, v);
    if (lane == me) mine = acc;
    if (!Inclusive) acc = Op::apply(acc, v);
  }
  return mine;
}

}  // namespace mps_ops_cuda

namespace metal {

// __syncthreads: every non-exited thread of the block, with shared and global
// memory ordered across it (enough for any mem_flags).
inline void threadgroup_barrier(mem_flags = mem_flags::mem_none) { __syncthreads(); }

inline void simdgroup_barrier(mem_flags = mem_flags::mem_none) {
  __nvvm_bar_warp_sync(mps_ops_cuda::active_lanes());
}

#define MPS_OPS_CUDA_REDUCE(NAME, OP)                                            \
  template <class T>                                                             \
  T NAME(T x) {                                                                  \
    return mps_ops_cuda::reduce_in_lane_order<T, mps_ops_cuda::OP>(x);           \
  }
MPS_OPS_CUDA_REDUCE(simd_sum, op_sum)
MPS_OPS_CUDA_REDUCE(simd_product, op_product)
MPS_OPS_CUDA_REDUCE(simd_min, op_min)
MPS_OPS_CUDA_REDUCE(simd_max, op_max)
MPS_OPS_CUDA_REDUCE(simd_and, op_and)
MPS_OPS_CUDA_REDUCE(simd_or, op_or)
MPS_OPS_CUDA_REDUCE(simd_xor, op_xor)
#undef MPS_OPS_CUDA_REDUCE

#define MPS_OPS_CUDA_SCAN(NAME, OP, INCLUSIVE)                                   \
  template <class T>                                                             \
  T NAME(T x) {                                                                  \
    return mps_ops_cuda::scan_in_lane_order<T, mps_ops_cuda::OP, INCLUSIVE>(x);  \
  }
MPS_OPS_CUDA_SCAN(simd_prefix_inclusive_sum, op_sum, true)
MPS_OPS_CUDA_SCAN(simd_prefix_exclusive_sum, op_sum, false)
MPS_OPS_CUDA_SCAN(simd_prefix_inclusive_product, op_product, true)
MPS_OPS_CUDA_SCAN(simd_prefix_exclusive_product, op_product, false)
#undef MPS_OPS_CUDA_SCAN

template <class T, class I>
T simd_shuffle(T x, I lane) {
  return mps_ops_cuda::shuffle<mps_ops_cuda::shuffle_op::index>(mps_ops_cuda::active_lanes(), x,
                                                                uint32_t(lane));
}
template <class T, class I>
T simd_broadcast(T x, I lane) {
  return simd_shuffle(x, lane);
}
// Lanes below delta (above 31 - delta for _down) keep their own value, as
// shfl.up/down leave them.
template <class T, class I>
T simd_shuffle_up(T x, I delta) {
  return mps_ops_cuda::shuffle<mps_ops_cuda::shuffle_op::up>(mps_ops_cuda::active_lanes(), x,
                                                             uint32_t(delta));
}
template <class T, class I>
T simd_shuffle_down(T x, I delta) {
  return mps_ops_cuda::shuffle<mps_ops_cuda::shuffle_op::down>(mps_ops_cuda::active_lanes(), x,
                                                               uint32_t(delta));
}
template <class T, class I>
T simd_shuffle_xor(T x, I mask) {
  return mps_ops_cuda::shuffle<mps_ops_cuda::shuffle_op::xor_mask>(mps_ops_cuda::active_lanes(), x,
                                                                   uint32_t(mask));
}
template <class T, class I>
T simd_shuffle_rotate_up(T x, I delta) {
  const uint32_t source = (mps_ops_cuda::lane_id() - uint32_t(delta)) % mps_ops_cuda::simd_width;
  return simd_shuffle(x, source);
}
template <class T, class I>
T simd_shuffle_rotate_down(T x, I delta) {
  const uint32_t source = (mps_ops_cuda::lane_id() + uint32_t(delta)) % mps_ops_cuda::simd_width;
  return simd_shuffle(x, source);
}
// A lane whose source falls off the end takes the `fill` operand of the lane
// it wraps around to.
template <class T, class I>
T simd_shuffle_and_fill_up(T x, T fill, I delta) {
  const uint32_t lane = mps_ops_cuda::lane_id();
  const uint32_t source = (lane - uint32_t(delta)) % mps_ops_cuda::simd_width;
  const T shifted = simd_shuffle(x, source);
  const T filled = simd_shuffle(fill, source);
  return lane >= uint32_t(delta) ? shifted : filled;
}
template <class T, class I>
T simd_shuffle_and_fill_down(T x, T fill, I delta) {
  const uint32_t lane = mps_ops_cuda::lane_id();
  const uint32_t source = (lane + uint32_t(delta)) % mps_ops_cuda::simd_width;
  const T shifted = simd_shuffle(x, source);
  const T filled = simd_shuffle(fill, source);
  return lane + uint32_t(delta) < mps_ops_cuda::simd_width ? shifted : filled;
}

template <class T>
T simd_broadcast_first(T x) {
  const uint32_t mask = mps_ops_cuda::active_lanes();
  return mps_ops_cuda::shuffle<mps_ops_cuda::shuffle_op::index>(mask, x, mps_ops_cuda::first_lane(mask));
}

// simd_vote: the lanes whose predicate held, one bit per lane.
struct simd_vote {
  using vote_t = uint64_t;
  vote_t bits;
  explicit operator vote_t() const { return bits; }
  bool all() const { return bits == ~vote_t(0) >> (64 - mps_ops_cuda::simd_width); }
  bool any() const { return bits != 0; }
};

inline simd_vote simd_ballot(bool predicate) {
  return simd_vote{__nvvm_vote_ballot_sync(mps_ops_cuda::active_lanes(), predicate)};
}
inline bool simd_any(bool predicate) {
  return __nvvm_vote_any_sync(mps_ops_cuda::active_lanes(), predicate);
}
// True when every active lane holds the predicate.
inline bool simd_all(bool predicate) {
  return __nvvm_vote_all_sync(mps_ops_cuda::active_lanes(), predicate);
}
inline bool simd_is_first() {
  return mps_ops_cuda::lane_id() == mps_ops_cuda::first_lane(mps_ops_cuda::active_lanes());
}

}  // namespace metal
