// torch.take: out[i] = self.flatten()[index[i]], and Tensor.put_:
// self.flatten()[index[i]] = source[i] (or +=), negative indices counting
// from the end. self may be strided: its logical (row-major) position is
// decomposed over its sizes and mapped through its byte strides. take,
// put_store and put_add check each index as they read it (out_of_range, a
// KernelFlag: no pass over the indices before the kernel); for put, which
// resolves repeated targets in index order, the host has checked them (it
// sorts them first). The host made out, index and source contiguous.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/per_element.h>
#include <mps_ops/types.h>

#include "take_params.h"
using namespace metal;

namespace {

// self's offset of the row-major position `flat`, divided out in I (uint or
// long). The outermost dim's coordinate is what is left of flat (a 1-D self
// divides nothing).
template <typename I>
inline long decomposed_offset(I flat, constant long* sizes, constant long* strides, int ndim) {
  long offset = 0;
  for (int d = ndim - 1; d > 0; --d) {
    const I size = I(sizes[d]);
    offset += long(flat % size) * strides[d];
    flat /= size;
  }
  return offset + long(flat) * strides[0];
}

// Where self has fewer than 2**32 elements (`narrow`) the divisions are
// 32-bit: a GPU divides 32-bit integers in a few instructions, 64-bit ones in
// software.
inline long flat_offset(long flat, constant long* sizes, constant long* strides, int ndim, bool narrow) {
  return narrow ? decomposed_offset<uint>(uint(flat), sizes, strides, ndim)
                : decomposed_offset<long>(flat, sizes, strides, ndim);
}

// Reads a thread's K indices (per_element.h's tiles; past count, index 0:
// self has an element, the host checked), each normalised into [0, numel).
// Whether one lay outside [-numel, numel): then the thread uses none.
// Every index is read before any element: the accesses then issue together.
template <uint K>
inline bool read_flat_indices(constant long* index, uint first, uint count, long numel, thread long* flat) {
  bool outside = false;
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * mps_ops::elementwise_tile;
    flat[k] = i < count ? index[i] : 0;
    if (flat[k] < 0) {
      flat[k] += numel;
    }
    // One unsigned compare for both ends of [-numel, numel).
    outside = outside || ulong(flat[k]) >= ulong(numel);
  }
  return outside;
}

}  // namespace

template <typename T>
kernel void take(device T* out [[buffer(0)]],
                 device int* out_of_range [[buffer(1)]],
                 constant long* index [[buffer(2)]],
                 constant char* self [[buffer(3)]],
                 constant long* sizes [[buffer(4)]],
                 constant long* strides [[buffer(5)]],
                 constant uint& ndim [[buffer(6)]],
                 constant long& numel [[buffer(7)]],
                 constant uint& count [[buffer(8)]],
                 uint thread_index [[thread_position_in_grid]]) {
  constexpr uint K = mps_ops::take_per_thread;
  constexpr uint tile = mps_ops::elementwise_tile;
  const uint first = mps_ops::per_element_first<K>(thread_index);
  long flat[K];
  if (read_flat_indices<K>(index, first, count, numel, flat)) {
    *out_of_range = 1;
    return;
  }
  const bool narrow = numel <= long(0xFFFFFFFFu);
  T values[K];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    values[k] = *reinterpret_cast<constant T*>(self + flat_offset(flat[k], sizes, strides, int(ndim), narrow));
  }
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * tile;
    if (i < count) {
      out[i] = values[k];
    }
  }
}

// put_ where the order of repeated targets may go (take.mm's put_ says
// when): each thread writes its sources straight to their targets. Store:
// one of a repeated target's writes wins. Add (every dtype but long, which
// MSL cannot add atomically): the target gets every source, in the GPU's
// order. Slots as take's (the per-position operand first, self through its
// layout fourth): one host loop binds all three.
namespace {

struct put_store_mode {
  template <typename T>
  static void write(device char* self, long offset, T value) {
    *reinterpret_cast<device T*>(self + offset) = value;
  }
};

// A value of under 4 bytes as the low bits of a word, and back.
inline uint narrow_bits(half v) {
  return uint(as_type<ushort>(v));
}
inline uint narrow_bits(bfloat v) {
  return uint(as_type<ushort>(v));
}
inline uint narrow_bits(short v) {
  return uint(ushort(v));
}
inline uint narrow_bits(char v) {
  return uint(uchar(v));
}
inline uint narrow_bits(uchar v) {
  return uint(v);
}
inline uint narrow_bits(bool v) {
  return v ? 1u : 0u;
}
template <typename T>
T from_narrow_bits(uint bits);
template <>
half from_narrow_bits<half>(uint bits) {
  return as_type<half>(ushort(bits));
}
template <>
bfloat from_narrow_bits<bfloat>(uint bits) {
  return as_type<bfloat>(ushort(bits));
}
template <>
short from_narrow_bits<short>(uint bits) {
  return short(ushort(bits));
}
template <>
char from_narrow_bits<char>(uint bits) {
  return char(uchar(bits));
}
template <>
uchar from_narrow_bits<uchar>(uint bits) {
  return uchar(bits);
}
template <>
bool from_narrow_bits<bool>(uint bits) {
  return bits != 0u;
}

// An atomic add of value to self's element at byte offset `offset`, rounded
// to T as the CPU's `+=`: int and float by MSL's atomic add; narrower types
// by a compare-and-swap of the 32-bit word holding them (MSL has no atomics
// under 4 bytes; the host binds self from a word boundary to one past its
// last word).
template <typename T, bool Narrow = (sizeof(T) < 4)>
struct atomic_adder {
  static void add(device char* self, long offset, T value) {
    metal::atomic_fetch_add_explicit(reinterpret_cast<device metal::atomic<T>*>(self + offset), value,
                                     metal::memory_order_relaxed);
  }
};
template <typename T>
struct atomic_adder<T, true> {
  static void add(device char* self, long offset, T value) {
    device metal::atomic_uint* word = reinterpret_cast<device metal::atomic_uint*>(self + (offset & ~long(3)));
    const uint shift = uint(offset & 3) * 8u;
    const uint mask = ((1u << (sizeof(T) * 8u)) - 1u) << shift;
    uint old = metal::atomic_load_explicit(word, metal::memory_order_relaxed);
    while (true) {
      const T sum = static_cast<T>(mps_ops::opmath_t<T>(from_narrow_bits<T>((old & mask) >> shift)) +
                                   mps_ops::opmath_t<T>(value));
      const uint updated = (old & ~mask) | (narrow_bits(sum) << shift);
      // On failure, old is the word's value now: try again from it.
      if (metal::atomic_compare_exchange_weak_explicit(word, &old, updated, metal::memory_order_relaxed,
                                                       metal::memory_order_relaxed)) {
        return;
      }
    }
  }
};

struct put_add_mode {
  template <typename T>
  static void write(device char* self, long offset, T value) {
    atomic_adder<T>::add(self, offset, value);
  }
};

template <typename T, typename Mode>
inline void put_scattered(constant T* source,
                          device int* out_of_range,
                          constant long* index,
                          device char* self,
                          constant long* sizes,
                          constant long* strides,
                          uint ndim,
                          long numel,
                          uint count,
                          uint thread_index) {
  constexpr uint K = mps_ops::take_per_thread;
  const uint first = mps_ops::per_element_first<K>(thread_index);
  long flat[K];
  if (read_flat_indices<K>(index, first, count, numel, flat)) {
    *out_of_range = 1;
    return;
  }
  const bool narrow = numel <= long(0xFFFFFFFFu);
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * mps_ops::elementwise_tile;
    if (i < count) {
      Mode::write(self, flat_offset(flat[k], sizes, strides, int(ndim), narrow), source[i]);
    }
  }
}

}  // namespace

template <typename T>
kernel void put_store(constant T* source [[buffer(0)]],
                      device int* out_of_range [[buffer(1)]],
                      constant long* index [[buffer(2)]],
                      device char* self [[buffer(3)]],
                      constant long* sizes [[buffer(4)]],
                      constant long* strides [[buffer(5)]],
                      constant uint& ndim [[buffer(6)]],
                      constant long& numel [[buffer(7)]],
                      constant uint& count [[buffer(8)]],
                      uint thread_index [[thread_position_in_grid]]) {
  put_scattered<T, put_store_mode>(source, out_of_range, index, self, sizes, strides, ndim, numel, count,
                                   thread_index);
}

template <typename T>
kernel void put_add(constant T* source [[buffer(0)]],
                    device int* out_of_range [[buffer(1)]],
                    constant long* index [[buffer(2)]],
                    device char* self [[buffer(3)]],
                    constant long* sizes [[buffer(4)]],
                    constant long* strides [[buffer(5)]],
                    constant uint& ndim [[buffer(6)]],
                    constant long& numel [[buffer(7)]],
                    constant uint& count [[buffer(8)]],
                    uint thread_index [[thread_position_in_grid]]) {
  put_scattered<T, put_add_mode>(source, out_of_range, index, self, sizes, strides, ndim, numel, count,
                                 thread_index);
}

// put_ through bins (take.mm's binned_put says when): three passes that
// reorder the writes by where they land, so that the writes running at
// once fall in a few cache-sized pieces of self instead of all over it.
// put_bin_count: each threadgroup counts its indices per bin; put_bin_scatter
// (after a running sum over the counts, on the host's side) writes each
// index's flat position and source value to its bin's slots; put_bin_add and
// put_bin_store then apply them in bin order. Writes within a bin go in any
// order, as put_add's and put_store's do. A threadgroup of G threads (any G
// the host chooses, at most put_bin_group_threads) takes G *
// put_bin_per_thread indices; there are at most 2 * G bins.
namespace {

// Index i's flat position in [0, numel), or -1 where it lies outside
// [-numel, numel).
inline long flat_position(constant long* index, uint i, long numel) {
  long flat = index[i];
  if (flat < 0) {
    flat += numel;
  }
  return ulong(flat) < ulong(numel) ? flat : -1;
}

}  // namespace

// I: index's type, long (a template for the host name's type).
template <typename I>
kernel void put_bin_count(device uint* counts [[buffer(0)]],
                          device int* out_of_range [[buffer(1)]],
                          constant I* index [[buffer(2)]],
                          constant mps_ops::put_bin_params& params [[buffer(3)]],
                          uint group [[threadgroup_position_in_grid]],
                          uint lane [[thread_index_in_threadgroup]],
                          uint threads [[threads_per_threadgroup]]) {
  threadgroup atomic_uint in_bin[mps_ops::put_bins_max];
  for (uint b = lane; b < uint(params.bins); b += threads) {
    atomic_store_explicit(&in_bin[b], 0u, memory_order_relaxed);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  bool outside = false;
  const uint first = group * threads * mps_ops::put_bin_per_thread + lane;
  for (uint k = 0; k < mps_ops::put_bin_per_thread; ++k) {
    const uint i = first + k * threads;
    if (i < uint(params.count)) {
      const long flat = flat_position(index, i, params.numel);
      if (flat < 0) {
        outside = true;
      } else {
        atomic_fetch_add_explicit(&in_bin[uint(flat >> params.bin_shift)], 1u, memory_order_relaxed);
      }
    }
  }
  if (outside) {
    *out_of_range = 1;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint b = lane; b < uint(params.bins); b += threads) {
    counts[b * uint(params.groups) + group] = atomic_load_explicit(&in_bin[b], memory_order_relaxed);
  }
}

// ends: the inclusive running sum of counts, so this group's first slot in
// bin b is ends - counts at [b][group]. The group first stages its entries
// in threadgroup memory, grouped by bin, then copies them out in that order:
// each bin's entries leave as one run of neighbouring slots, not as single
// writes scattered over every bin (first version: 3.0 of the float32 put_'s
// 4.3 ms on an H200 in this pass, 128 bins). An index outside [-numel, numel)
// takes no slot (put_bin_count raised the flag).
template <typename T>
kernel void put_bin_scatter(device uint* positions [[buffer(0)]],
                            device T* values [[buffer(1)]],
                            constant uint* counts [[buffer(2)]],
                            constant uint* ends [[buffer(3)]],
                            constant long* index [[buffer(4)]],
                            constant T* source [[buffer(5)]],
                            constant mps_ops::put_bin_params& params [[buffer(6)]],
                            uint group [[threadgroup_position_in_grid]],
                            uint lane [[thread_index_in_threadgroup]],
                            uint threads [[threads_per_threadgroup]]) {
  constexpr uint most_staged = mps_ops::put_bin_group_threads * mps_ops::put_bin_per_thread;
  threadgroup uint running[mps_ops::put_bin_group_threads];
  threadgroup atomic_uint next_staged[mps_ops::put_bins_max];
  threadgroup uint staged_to_slot[mps_ops::put_bins_max];  // a bin's slot less its staging place
  threadgroup uint staged_positions[most_staged];
  threadgroup T staged_values[most_staged];
  // This group's counts, two bins a thread, and their running sum over the
  // threads (Hillis-Steele: log2(threads) steps).
  const uint bins = uint(params.bins);
  const uint b0 = 2 * lane, b1 = 2 * lane + 1;
  const uint count0 = b0 < bins ? counts[b0 * uint(params.groups) + group] : 0u;
  const uint count1 = b1 < bins ? counts[b1 * uint(params.groups) + group] : 0u;
  running[lane] = count0 + count1;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint step = 1; step < threads; step *= 2) {
    const uint earlier = lane >= step ? running[lane - step] : 0u;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    running[lane] += earlier;
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  const uint staged_at0 = running[lane] - count0 - count1;
  const uint staged = running[threads - 1];
  if (b0 < bins) {
    atomic_store_explicit(&next_staged[b0], staged_at0, memory_order_relaxed);
    const uint at = b0 * uint(params.groups) + group;
    staged_to_slot[b0] = ends[at] - count0 - staged_at0;
  }
  if (b1 < bins) {
    atomic_store_explicit(&next_staged[b1], staged_at0 + count0, memory_order_relaxed);
    const uint at = b1 * uint(params.groups) + group;
    staged_to_slot[b1] = ends[at] - count1 - (staged_at0 + count0);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const uint first = group * threads * mps_ops::put_bin_per_thread + lane;
  for (uint k = 0; k < mps_ops::put_bin_per_thread; ++k) {
    const uint i = first + k * threads;
    if (i < uint(params.count)) {
      const long flat = flat_position(index, i, params.numel);
      if (flat >= 0) {
        const uint place = atomic_fetch_add_explicit(&next_staged[uint(flat >> params.bin_shift)], 1u,
                                                     memory_order_relaxed);
        staged_positions[place] = uint(flat);
        staged_values[place] = source[i];
      }
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint place = lane; place < staged; place += threads) {
    const uint flat = staged_positions[place];
    const uint slot = staged_to_slot[flat >> uint(params.bin_shift)] + place;
    positions[slot] = flat;
    values[slot] = staged_values[place];
  }
}

namespace {

// The first `*filled` slots (the running sum's last entry: every index in
// range, unless the flag is raised), each thread up to take_per_thread.
template <typename T, typename Mode>
inline void put_binned(device char* self, constant uint* positions, constant T* values, constant uint* filled,
                       uint thread_index) {
  constexpr uint K = mps_ops::take_per_thread;
  const uint first = mps_ops::per_element_first<K>(thread_index);
  const uint count = *filled;
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < K; ++k) {
    const uint i = first + k * mps_ops::elementwise_tile;
    if (i < count) {
      Mode::write(self, long(positions[i]) * long(sizeof(T)), values[i]);
    }
  }
}

}  // namespace

// self: contiguous (the host bins only then), bound as for put_add.
template <typename T>
kernel void put_bin_add(device char* self [[buffer(0)]],
                        constant uint* positions [[buffer(1)]],
                        constant T* values [[buffer(2)]],
                        constant uint* filled [[buffer(3)]],
                        uint thread_index [[thread_position_in_grid]]) {
  put_binned<T, put_add_mode>(self, positions, values, filled, thread_index);
}

template <typename T>
kernel void put_bin_store(device char* self [[buffer(0)]],
                          constant uint* positions [[buffer(1)]],
                          constant T* values [[buffer(2)]],
                          constant uint* filled [[buffer(3)]],
                          uint thread_index [[thread_position_in_grid]]) {
  put_binned<T, put_store_mode>(self, positions, values, filled, thread_index);
}

// targets: the normalised indices sorted by value, each run of equal targets
// in index order (the host sorts target * n + position); order: where each
// came from in index and source. The thread at the end of a run writes that
// element: the run's last source, or the element plus the run's sources added
// in index order, rounding to T at each step as the CPU's serial loop does.
template <typename T>
kernel void put(device char* self [[buffer(0)]],
                constant T* source [[buffer(1)]],
                constant long* targets [[buffer(2)]],
                constant long* order [[buffer(3)]],
                constant mps_ops::put_params& params [[buffer(4)]],
                uint i [[thread_position_in_grid]]) {
  const long target = targets[i];
  if (long(i) + 1 < params.count && targets[i + 1] == target) {
    return;
  }
  device T* element = reinterpret_cast<device T*>(
      self + flat_offset(target, params.sizes, params.strides, params.ndim, params.narrow != 0));
  if (params.accumulate == 0) {
    *element = source[order[i]];
    return;
  }
  long first = long(i);
  while (first > 0 && targets[first - 1] == target) {
    --first;
  }
  T sum = *element;
  for (long j = first; j <= long(i); ++j) {
    sum = static_cast<T>(mps_ops::opmath_t<T>(sum) + mps_ops::opmath_t<T>(source[order[j]]));
  }
  *element = sum;
}

MPS_OPS_FOR_ALL_BUT_WIDE_UNSIGNED(MPS_OPS_INSTANTIATE_FOR_TYPE, take, dense)
MPS_OPS_FOR_ALL_BUT_WIDE_UNSIGNED(MPS_OPS_INSTANTIATE_FOR_TYPE, put, dense)
MPS_OPS_FOR_ALL_BUT_WIDE_UNSIGNED(MPS_OPS_INSTANTIATE_FOR_TYPE, put_store, dense)
// What put_add can add atomically: MSL has no 64-bit atomics (long), and
// no float64.
#define MPS_OPS_FOR_PUT_ADDABLE(M, ...)                                                            \
  MPS_OPS_FOR_BOOL(M, __VA_ARGS__) M(__VA_ARGS__, uchar) M(__VA_ARGS__, char) M(__VA_ARGS__, short) \
  M(__VA_ARGS__, int) MPS_OPS_FOR_FLOATING(M, __VA_ARGS__)
MPS_OPS_FOR_PUT_ADDABLE(MPS_OPS_INSTANTIATE_FOR_TYPE, put_add, dense)
MPS_OPS_INSTANTIATE_FOR_TYPE(put_bin_count, dense, long)
MPS_OPS_FOR_ALL_BUT_WIDE_UNSIGNED(MPS_OPS_INSTANTIATE_FOR_TYPE, put_bin_scatter, dense)
MPS_OPS_FOR_ALL_BUT_WIDE_UNSIGNED(MPS_OPS_INSTANTIATE_FOR_TYPE, put_bin_store, dense)
MPS_OPS_FOR_PUT_ADDABLE(MPS_OPS_INSTANTIATE_FOR_TYPE, put_bin_add, dense)
