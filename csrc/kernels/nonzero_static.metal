// nonzero_static (a fill for torch 2.9 to 2.11; the host stub in
// csrc/operations/nonzero_static.mm): the coordinates of the first `rows`
// nonzero elements in row-major order, then fill_value, in a shape fixed by
// the call. Nothing comes back to the host (nonzero_static exists so that
// compiled and exported programs need not wait for a count), so the
// compaction runs as four kernels on the GPU:
//   nonzero_static_count  one threadgroup per block of elements: its count;
//   nonzero_static_scan   one threadgroup, nonzero_static_scan_per_thread
//                         blocks a thread: the blocks' exclusive offsets in
//                         order, and the total after the last;
//   nonzero_static_write  one threadgroup per block again: each nonzero
//                         element's rank (its block's offset plus those
//                         before it in the block), and below `rows` its
//                         coordinates in that row;
//   nonzero_static_fill   a thread per nonzero_static_fill_rows rows (a
//                         grid-stride loop): fill_value in the rows past
//                         the total.
// A thread takes nonzero_static_per_thread elements a threadgroup's width
// apart (a SIMD group's loads coalesced); ranks follow the elements' order,
// as the CPU's.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>
#include <mps_ops/nonzero.h>
#include "nonzero_static_params.h"
using namespace metal;

namespace {

// One threadgroup's block of the input: its values from the block's first
// element on, and how many of its elements lie inside the input. Offsets
// within a block (at most nonzero_static_per_thread * 1,024) are 32-bit,
// so an element's address is one multiply-add on the block's pointer (a
// 64-bit index cost each element a 64-bit multiply and add).
template <typename T>
struct input_block {
  constant T* values;
  uint size;
  bool full;  // every element inside: loads need no bounds check
  int parts;  // values an element (2: a complex element's parts)

  // 1 where the element at `offset` is nonzero, 0 there or past the input.
  uint flag_at(uint offset) const {
    if (!full && offset >= size) {
      return 0u;
    }
    if (parts == 1) {
      return mps_ops::is_nonzero(values[offset]) ? 1u : 0u;
    }
    return mps_ops::is_nonzero(values[2 * offset]) || mps_ops::is_nonzero(values[2 * offset + 1]) ? 1u : 0u;
  }
};

template <typename T>
inline input_block<T> block_of(constant T* in, ulong block_first, uint width,
                               constant mps_ops::nonzero_static_params& p) {
  const ulong block_size = ulong(width) * ulong(mps_ops::nonzero_static_per_thread);
  const ulong inside = p.numel - block_first;
  return input_block<T>{in + block_first * ulong(p.parts), uint(min(inside, block_size)), inside >= block_size,
                        p.parts};
}

// The SIMD group's lanes where predicate holds, one bit each.
inline ulong lanes_where(bool predicate) {
  return static_cast<ulong>(simd_ballot(predicate));
}

// The threadgroup's sum of `count` (every thread gets it); `totals` holds
// a word per SIMD group (at most 32).
inline uint group_sum(uint count, threadgroup uint* totals, uint lane, uint simd_group, uint simd_size, uint width) {
  const uint in_simd = simd_sum(count);
  if (lane == 0) {
    totals[simd_group] = in_simd;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  uint total = 0;
  for (uint g = 0; g < width / simd_size; ++g) {
    total += totals[g];
  }
  return total;
}

// Exclusive prefix sums of `count` words in order, by the first SIMD group
// (each lane sums a run of consecutive words, the runs' sums are prefixed
// across the lanes, then each lane writes its run's prefixes back). Returns
// the sum of the words before the end of the lane's run: the last lane of
// the first SIMD group gets their total (0 in other SIMD groups).
inline uint words_exclusive_prefix(threadgroup uint* words, uint count, uint lane, uint simd_group, uint simd_size) {
  if (simd_group != 0) {
    return 0u;
  }
  const uint run = (count + simd_size - 1) / simd_size;
  const uint first = min(lane * run, count), last = min(first + run, count);
  uint sum = 0;
  for (uint w = first; w < last; ++w) {
    sum += words[w];
  }
  uint before = simd_prefix_exclusive_sum(sum);
  for (uint w = first; w < last; ++w) {
    const uint word = words[w];
    words[w] = before;
    before += word;
  }
  return before;
}

}  // namespace

// Element k * width + t of a block is thread t's k-th (reads coalesced
// across a SIMD group); the block's elements in order are then rounds k,
// SIMD groups, lanes.
template <typename T>
kernel void nonzero_static_count(device uint* counts [[buffer(0)]],
                                 constant T* in [[buffer(1)]],
                                 constant mps_ops::nonzero_static_params& p [[buffer(2)]],
                                 uint group [[threadgroup_position_in_grid]],
                                 uint thread_index [[thread_index_in_threadgroup]],
                                 uint width [[threads_per_threadgroup]],
                                 uint lane [[thread_index_in_simdgroup]],
                                 uint simd_group [[simdgroup_index_in_threadgroup]],
                                 uint simd_size [[threads_per_simdgroup]]) {
  threadgroup uint totals[32];
  const ulong block_first = ulong(group) * ulong(width) * ulong(mps_ops::nonzero_static_per_thread);
  const input_block<T> block = block_of(in, block_first, width, p);
  uint count = 0;
  _Pragma("clang loop unroll(full)")  // the loads in flight together
  for (uint k = 0; k < mps_ops::nonzero_static_per_thread; ++k) {
    count += block.flag_at(k * width + thread_index);
  }
  const uint total = group_sum(count, totals, lane, simd_group, simd_size, width);
  if (thread_index == 0) {
    counts[group] = total;
  }
}

template <typename T>  // long: the kernel is the same for every input, named for the host-name grammar
kernel void nonzero_static_scan(device ulong* offsets [[buffer(0)]],
                                constant uint* counts [[buffer(1)]],
                                constant mps_ops::nonzero_static_params& p [[buffer(2)]],
                                uint thread_index [[thread_index_in_threadgroup]],
                                uint width [[threads_per_threadgroup]],
                                uint lane [[thread_index_in_simdgroup]],
                                uint simd_group [[simdgroup_index_in_threadgroup]],
                                uint simd_size [[threads_per_simdgroup]]) {
  constexpr uint per_thread = mps_ops::nonzero_static_scan_per_thread;
  threadgroup uint words[33];  // a word per SIMD group, then the pass's total
  ulong carry = 0;
  for (ulong base = 0; base < p.blocks; base += ulong(width) * per_thread) {
    const ulong first = base + ulong(thread_index) * per_thread;
    uint mine[per_thread];
    uint sum = 0;
    for (uint k = 0; k < per_thread; ++k) {
      mine[k] = first + k < p.blocks ? counts[first + k] : 0u;
      sum += mine[k];
    }
    const uint in_simd = simd_prefix_exclusive_sum(sum);
    if (lane == simd_size - 1) {
      words[simd_group] = in_simd + sum;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // The SIMD groups' totals, scanned; the pass's total after them.
    const uint total = words_exclusive_prefix(words, width / simd_size, lane, simd_group, simd_size);
    if (simd_group == 0 && lane == simd_size - 1) {
      words[32] = total;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    ulong running = carry + words[simd_group] + in_simd;
    for (uint k = 0; k < per_thread; ++k) {
      if (first + k < p.blocks) {
        offsets[first + k] = running;
      }
      running += mine[k];
    }
    carry += words[32];
    // Every thread has read the words before the next pass writes them.
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (thread_index == 0) {
    offsets[p.blocks] = carry;
  }
}

template <typename T>
kernel void nonzero_static_write(device long* out [[buffer(0)]],
                                 constant T* in [[buffer(1)]],
                                 constant ulong* offsets [[buffer(2)]],
                                 constant mps_ops::nonzero_static_params& p [[buffer(3)]],
                                 uint group [[threadgroup_position_in_grid]],
                                 uint thread_index [[thread_index_in_threadgroup]],
                                 uint width [[threads_per_threadgroup]],
                                 uint lane [[thread_index_in_simdgroup]],
                                 uint simd_group [[simdgroup_index_in_threadgroup]],
                                 uint simd_size [[threads_per_simdgroup]]) {
  // Per (round, SIMD group), in the elements' order: its nonzeros, then
  // the block's nonzeros before it.
  threadgroup uint words[mps_ops::nonzero_static_per_thread * 32];
  const ulong start = offsets[group];
  if (start >= p.rows) {
    return;  // the whole group: its elements rank past the rows
  }
  const uint simd_groups = width / simd_size;
  const ulong block_first = ulong(group) * ulong(width) * ulong(mps_ops::nonzero_static_per_thread);
  const input_block<T> block = block_of(in, block_first, width, p);
  // A SIMD group's nonzeros in a round and a lane's rank among them: a
  // ballot and a population count (a sum or prefix over the lanes takes a
  // shuffle per halving step).
  const ulong lanes_before = (ulong(1) << lane) - 1;
  uint flags = 0;
  _Pragma("clang loop unroll(full)")  // the loads in flight together
  for (uint k = 0; k < mps_ops::nonzero_static_per_thread; ++k) {
    const uint flag = block.flag_at(k * width + thread_index);
    flags |= flag << k;
    const ulong voted = lanes_where(flag != 0);
    if (lane == 0) {
      words[k * simd_groups + simd_group] = uint(popcount(voted));
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  words_exclusive_prefix(words, mps_ops::nonzero_static_per_thread * simd_groups, lane, simd_group, simd_size);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint k = 0; k < mps_ops::nonzero_static_per_thread; ++k) {
    const uint flag = (flags >> k) & 1u;
    const ulong voted = lanes_where(flag != 0);
    const ulong rank = start + words[k * simd_groups + simd_group] + popcount(voted & lanes_before);
    if (flag == 0 || rank >= p.rows) {
      continue;
    }
    // The element's coordinates, last dim first.
    device long* row = out + rank * ulong(p.ndim);
    const ulong element = block_first + (k * width + thread_index);
    if (p.narrow != 0) {
      uint rest = uint(element);
      for (int d = p.ndim - 1; d >= 0; --d) {
        const mps_ops::fast_divisor by_size{p.by_size[d].divisor, p.by_size[d].multiplier, p.by_size[d].shift};
        const uint quotient = mps_ops::quotient(rest, by_size);
        row[d] = long(mps_ops::remainder_of(rest, quotient, by_size));
        rest = quotient;
      }
    } else {
      ulong rest = element;
      for (int d = p.ndim - 1; d >= 0; --d) {
        const ulong size = ulong(p.sizes[d]);
        row[d] = long(rest % size);
        rest /= size;
      }
    }
  }
}

template <typename T>  // long, the output's type
kernel void nonzero_static_fill(device long* out [[buffer(0)]],
                                constant ulong* offsets [[buffer(1)]],
                                constant mps_ops::nonzero_static_params& p [[buffer(2)]],
                                uint index [[thread_position_in_grid]],
                                uint threads [[threads_per_grid]]) {
  const ulong total = offsets[p.blocks];
  for (ulong row = index; row < p.rows; row += threads) {
    if (row >= total) {
      device long* values = out + row * ulong(p.ndim);
      for (int d = 0; d < p.ndim; ++d) {
        values[d] = p.fill_value;
      }
    }
  }
}

#define NONZERO_STATIC_INSTANTIATE(NAME, T) MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(NAME, dense, T, T), NAME, T)
MPS_OPS_FOR_ALL_BUT_WIDE_UNSIGNED(NONZERO_STATIC_INSTANTIATE, nonzero_static_count)
MPS_OPS_FOR_ALL_BUT_WIDE_UNSIGNED(NONZERO_STATIC_INSTANTIATE, nonzero_static_write)
MPS_OPS_INSTANTIATE_FOR_TYPE(nonzero_static_scan, dense, long)
MPS_OPS_INSTANTIATE_FOR_TYPE(nonzero_static_fill, dense, long)
