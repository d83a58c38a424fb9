// Barriers and SIMD-group functions (width 32) on top of the fibers. Each
// collective deposits the lane's operand in its fiber record and yields; the
// scheduler completes the collective for the lanes that met at the same call
// site (the caller's line and column, through defaulted source-location
// arguments) and the same function. Lanes outside the collective read as poison: NaN for floats,
// all-ones bits for integers, as reading an inactive lane is undefined.
#pragma once

#include <mps_ops_msl/simd_ops.h>

#include "fibers.h"

namespace mps_ops_emu {

inline const dispatch_args*& plain_loop_args() {
  static thread_local const dispatch_args* args = nullptr;
  return args;
}

// A barrier or collective reached by a kernel the prepass did not mark
// collective: it cannot be honoured in the plain loop.
inline bool in_fiber(const char* what) {
  if (current_group() != nullptr) return true;
  if (plain_loop_args() != nullptr) set_error(*plain_loop_args(), what);
  return false;
}

inline void block_at_collective(uint64_t site, resolve_fn resolve) {
  fiber& f = current_fiber();
  f.site = site;
  f.resolve = resolve;
  f.state = fiber::at_collective;
  yield_to_scheduler();
}

template <class T>
inline void poison(T& value) {
  unsigned char* bytes = reinterpret_cast<unsigned char*>(&value);
  for (unsigned i = 0; i < sizeof(T); ++i) bytes[i] = 0xff;
}

template <class T>
inline T lane_value(const fiber* f) {
  T v;
  copy_bytes(&v, f->value, sizeof(T));
  return v;
}

template <class T>
inline void set_result(fiber* f, const T& v) {
  copy_bytes(f->result, &v, sizeof(T));
}

template <class T>
inline T collect(uint64_t site, const T& value, resolve_fn resolve, uint32_t argument = 0) {
  static_assert(sizeof(T) <= sizeof(fiber::value), "SIMD operand too large");
  if (!in_fiber("a SIMD-group function ran in a kernel the emulator did not see as collective")) {
    return value;
  }
  fiber& f = current_fiber();
  copy_bytes(f.value, &value, sizeof(T));
  f.argument = argument;
  block_at_collective(site, resolve);
  T out;
  copy_bytes(&out, current_fiber().result, sizeof(T));
  return out;
}

// Reductions over the lanes present, in lane order.
template <class T, class Op>
void resolve_reduce(fiber** lanes, uint32_t n) {
  T acc = lane_value<T>(lanes[0]);
  for (uint32_t i = 1; i < n; ++i) acc = Op::apply(acc, lane_value<T>(lanes[i]));
  for (uint32_t i = 0; i < n; ++i) set_result(lanes[i], acc);
}

template <class T, class Op, bool Inclusive>
void resolve_scan(fiber** lanes, uint32_t n) {
  T acc = Op::template identity<T>();
  for (uint32_t i = 0; i < n; ++i) {
    const T v = lane_value<T>(lanes[i]);
    if (Inclusive) acc = Op::apply(acc, v);
    set_result(lanes[i], acc);
    if (!Inclusive) acc = Op::apply(acc, v);
  }
}

using ::mps_ops_msl::op_sum;
using ::mps_ops_msl::op_product;
using ::mps_ops_msl::op_min;
using ::mps_ops_msl::op_max;
using ::mps_ops_msl::op_and;
using ::mps_ops_msl::op_or;
using ::mps_ops_msl::op_xor;

// Shuffles: each lane reads the operand of a source lane computed from its
// own lane index and argument; a source outside the collective is poison
// (or the lane's `fill` operand for the *_and_fill variants).
enum class shuffle_kind { index, up, down, xor_mask, rotate_up, rotate_down, fill_up, fill_down };

template <class T, shuffle_kind Kind>
void resolve_shuffle(fiber** lanes, uint32_t n) {
  const fiber* by_lane[simd_width] = {};
  for (uint32_t i = 0; i < n; ++i) by_lane[lanes[i]->lane] = lanes[i];
  for (uint32_t i = 0; i < n; ++i) {
    fiber* f = lanes[i];
    const uint32_t lane = f->lane, a = f->argument;
    int64_t source = -1;
    bool use_fill = false;
    switch (Kind) {
      case shuffle_kind::index: source = a; break;
      case shuffle_kind::up: source = int64_t(lane) - a; break;
      case shuffle_kind::down: source = int64_t(lane) + a; break;
      case shuffle_kind::xor_mask: source = lane ^ a; break;
      case shuffle_kind::rotate_up: source = (lane + simd_width - a % simd_width) % simd_width; break;
      case shuffle_kind::rotate_down: source = (lane + a) % simd_width; break;
      case shuffle_kind::fill_up:
        source = int64_t(lane) - a;
        use_fill = source < 0;
        break;
      case shuffle_kind::fill_down:
        source = int64_t(lane) + a;
        use_fill = source >= int64_t(simd_width);
        break;
    }
    T v;
    if (use_fill) {
      // The fill operand of the lane that wraps around.
      const int64_t wrapped = Kind == shuffle_kind::fill_up ? source + simd_width : source - simd_width;
      const fiber* from = wrapped >= 0 && wrapped < int64_t(simd_width) ? by_lane[wrapped] : nullptr;
      if (from) {
        copy_bytes(&v, from->fill, sizeof(T));
      } else {
        poison(v);
      }
    } else if (source >= 0 && source < int64_t(simd_width) && by_lane[source]) {
      v = lane_value<T>(by_lane[source]);
    } else {
      poison(v);
    }
    set_result(f, v);
  }
}

inline void resolve_nothing(fiber**, uint32_t) {}

template <class T>
void resolve_first(fiber** lanes, uint32_t n) {
  const T v = lane_value<T>(lanes[0]);
  for (uint32_t i = 0; i < n; ++i) set_result(lanes[i], v);
}

inline void resolve_ballot(fiber** lanes, uint32_t n) {
  uint64_t mask = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (lane_value<uint64_t>(lanes[i])) mask |= uint64_t(1) << lanes[i]->lane;
  }
  for (uint32_t i = 0; i < n; ++i) set_result(lanes[i], mask);
}

inline void resolve_is_first(fiber** lanes, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) set_result(lanes[i], i == 0);
}

}  // namespace mps_ops_emu

namespace metal {

// The call site: line and column of the caller (source-location builtins in a
// default argument take the caller's position).
#define MPS_OPS_EMU_SITE uint64_t site = (uint64_t(__builtin_LINE()) << 32) | __builtin_COLUMN()

inline void threadgroup_barrier(mem_flags = mem_flags::mem_none, MPS_OPS_EMU_SITE) {
  if (!mps_ops_emu::in_fiber("threadgroup_barrier ran in a kernel the emulator did not see as "
                             "collective")) {
    return;
  }
  mps_ops_emu::fiber& f = mps_ops_emu::current_fiber();
  f.site = site;
  f.state = mps_ops_emu::fiber::at_barrier;
  mps_ops_emu::yield_to_scheduler();
}

// All lanes of the simdgroup that reach it wait for each other.
inline void simdgroup_barrier(mem_flags = mem_flags::mem_none, MPS_OPS_EMU_SITE) {
  if (!mps_ops_emu::in_fiber("simdgroup_barrier ran in a kernel the emulator did not see as "
                             "collective")) {
    return;
  }
  mps_ops_emu::block_at_collective(site, &mps_ops_emu::resolve_nothing);
}

#define MPS_OPS_EMU_REDUCE(NAME, OP)                                                   \
  template <class T>                                                                   \
  T NAME(T x, MPS_OPS_EMU_SITE) {                                                      \
    return mps_ops_emu::collect(site, x, &mps_ops_emu::resolve_reduce<T, mps_ops_emu::OP>); \
  }
MPS_OPS_EMU_REDUCE(simd_sum, op_sum)
MPS_OPS_EMU_REDUCE(simd_product, op_product)
MPS_OPS_EMU_REDUCE(simd_min, op_min)
MPS_OPS_EMU_REDUCE(simd_max, op_max)
MPS_OPS_EMU_REDUCE(simd_and, op_and)
MPS_OPS_EMU_REDUCE(simd_or, op_or)
MPS_OPS_EMU_REDUCE(simd_xor, op_xor)
#undef MPS_OPS_EMU_REDUCE

#define MPS_OPS_EMU_SCAN(NAME, OP, INCLUSIVE)                                          \
  template <class T>                                                                   \
  T NAME(T x, MPS_OPS_EMU_SITE) {                                                      \
    return mps_ops_emu::collect(site, x,                                               \
                                &mps_ops_emu::resolve_scan<T, mps_ops_emu::OP, INCLUSIVE>); \
  }
MPS_OPS_EMU_SCAN(simd_prefix_inclusive_sum, op_sum, true)
MPS_OPS_EMU_SCAN(simd_prefix_exclusive_sum, op_sum, false)
MPS_OPS_EMU_SCAN(simd_prefix_inclusive_product, op_product, true)
MPS_OPS_EMU_SCAN(simd_prefix_exclusive_product, op_product, false)
#undef MPS_OPS_EMU_SCAN

#define MPS_OPS_EMU_SHUFFLE(NAME, KIND)                                                \
  template <class T, class I>                                                          \
  T NAME(T x, I argument, MPS_OPS_EMU_SITE) {                                          \
    return mps_ops_emu::collect(                                                       \
        site, x, &mps_ops_emu::resolve_shuffle<T, mps_ops_emu::shuffle_kind::KIND>,    \
        uint32_t(argument));                                                           \
  }
MPS_OPS_EMU_SHUFFLE(simd_shuffle, index)
MPS_OPS_EMU_SHUFFLE(simd_broadcast, index)
MPS_OPS_EMU_SHUFFLE(simd_shuffle_up, up)
MPS_OPS_EMU_SHUFFLE(simd_shuffle_down, down)
MPS_OPS_EMU_SHUFFLE(simd_shuffle_xor, xor_mask)
MPS_OPS_EMU_SHUFFLE(simd_shuffle_rotate_up, rotate_up)
MPS_OPS_EMU_SHUFFLE(simd_shuffle_rotate_down, rotate_down)
#undef MPS_OPS_EMU_SHUFFLE

#define MPS_OPS_EMU_SHUFFLE_FILL(NAME, KIND)                                           \
  template <class T, class I>                                                          \
  T NAME(T x, T fill, I delta, MPS_OPS_EMU_SITE) {                                     \
    if (mps_ops_emu::current_group() != nullptr) {                                     \
      mps_ops_emu::copy_bytes(mps_ops_emu::current_fiber().fill, &fill, sizeof(T));    \
    }                                                                                  \
    return mps_ops_emu::collect(                                                       \
        site, x, &mps_ops_emu::resolve_shuffle<T, mps_ops_emu::shuffle_kind::KIND>,    \
        uint32_t(delta));                                                              \
  }
MPS_OPS_EMU_SHUFFLE_FILL(simd_shuffle_and_fill_up, fill_up)
MPS_OPS_EMU_SHUFFLE_FILL(simd_shuffle_and_fill_down, fill_down)
#undef MPS_OPS_EMU_SHUFFLE_FILL

template <class T>
T simd_broadcast_first(T x, MPS_OPS_EMU_SITE) {
  return mps_ops_emu::collect(site, x, &mps_ops_emu::resolve_first<T>);
}

// simd_vote: the lanes whose predicate held, one bit per lane.
struct simd_vote {
  using vote_t = uint64_t;
  vote_t bits;
  explicit operator vote_t() const { return bits; }
  bool all() const { return bits == ~vote_t(0) >> (64 - mps_ops_emu::simd_width); }
  bool any() const { return bits != 0; }
};

inline simd_vote simd_ballot(bool predicate, MPS_OPS_EMU_SITE) {
  // Carried as 64 bits both ways: the result is the lane mask.
  return simd_vote{mps_ops_emu::collect(site, uint64_t(predicate), &mps_ops_emu::resolve_ballot)};
}

inline bool simd_any(bool predicate, MPS_OPS_EMU_SITE) {
  return simd_ballot(predicate, site).bits != 0;
}

// True when every lane taking part holds the predicate.
inline bool simd_all(bool predicate, MPS_OPS_EMU_SITE) {
  const bool none_false = !mps_ops_emu::collect(
      site, !predicate, &mps_ops_emu::resolve_reduce<bool, mps_ops_emu::op_or>);
  return none_false;
}

inline bool simd_is_first(MPS_OPS_EMU_SITE) {
  return mps_ops_emu::collect(site, true, &mps_ops_emu::resolve_is_first);
}

#undef MPS_OPS_EMU_SITE

}  // namespace metal
