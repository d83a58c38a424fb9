// multi_margin_loss and its backward: `share` threads per sample (several
// samples per threadgroup, merged by shuffles where share fits a SIMD
// group: one group per sample left an H100 at 0.3x torch, each group's
// chain of dependent loads and barriers idling the memory system), summing
// over its classes. Per sample, with x its row and y its target:
//   loss = sum over j != y of max(0, margin - x[y] + x[j])^p * w[y] / c
//   d loss / d x[j] = (z > 0) * (p == 1 ? 1 : 2z) * w[y] * g / c, z = margin - x[y] + x[j]
//   d loss / d x[y] = minus the sum of those.
// w is 1 when no weight was given. The host has made x contiguous; a
// target outside [0, c) raises bad_target (the host's KernelFlag), its
// sample's loss is 0 and its gradient row unwritten: a check before the
// kernel would cost a pass and a round trip.
#include <metal_stdlib>
#include <mps_ops/reduction.h>

#include "margin_losses_params.h"
using namespace metal;

namespace {

// The forward's classes first, first + step, ... are loaded a run at a
// time, the whole run before any is used: one load in flight per thread
// leaves most of the memory system idle (on an Apple GPU too). Each thread
// still takes its classes in increasing order, so the sums are unchanged.
// Runs are elements_per_thread long, as the element-wise kernels'. (The
// backward holds a longer block: class_block below says why.)
template <typename T>
inline void load_class_run(thread float* values, constant T* row, long first, long step, long c) {
  _Pragma("clang loop unroll(full)")
  for (long k = 0; k < long(mps_ops::elements_per_thread(sizeof(T))); ++k) {
    const long j = first + k * step;
    values[k] = j < c ? float(row[j]) : 0.0f;
  }
}

// The backward's classes a thread holds at once: the rows mapping's
// elements per thread, so that a row of up to elements_per_row_thread *
// share classes (1024 over a SIMD group) is loaded whole, before any store.
// (A load after a store cannot move above it where the compiler cannot
// rule out that they alias: on the CUDA target, where constant memory is
// generic, and perhaps on an Apple GPU's too.)
// Measured on an H200 (ncu, rows of 1024 floats, 2**26 elements): 32 held,
// 64 registers at 46% occupancy, 135 us; runs of 4 as the forward's, 203
// us; a block of 4 branch-free, 151 us; torch's CUDA kernel 273 us. The
// forward, with no stores to wait behind, keeps its runs of 4 (32
// registers, 87% occupancy): 84 us, where 32 held took 102 (torch 97).
constexpr constant uint class_block = mps_ops::elements_per_row_thread;

// A thread's classes first, first + step, ... (class_block of them, 0 past
// the row's end), all loaded before any is used. Each thread still takes
// its classes in increasing order, so the sums are unchanged. The address
// steps a pointer (one add per load; as softmax's held rows).
template <typename T>
inline void load_class_block(thread float* values, constant T* row, long first, long step, long c) {
  constant T* at_k = row + first;
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < class_block; ++k) {
    values[k] = first + long(k) * step < c ? float(*at_k) : 0.0f;
    at_k += step;
  }
}

// Which sample a thread works on and which of its classes: first, first +
// step, ... (share threads per sample, group_size / share samples per group;
// the last group's threads past the last sample are inactive but merge).
struct sample_thread {
  long sample;
  long first;
  long step;
  bool active;
};
inline sample_thread place_in_sample(constant mps_ops::multi_margin_params& params, uint group,
                                     thread const mps_ops::group_position& at) {
  const uint share = params.share;
  const long sample = long(group) * long(at.size / share) + long(at.index / share);
  return sample_thread{sample, long(at.index % share), long(share), sample < params.n};
}

// The sample's target, or -1 (with bad_target raised) when it is not a class.
inline long checked_target(constant long* target, long i, long c, device int* bad_target) {
  const long y = target[i];
  if (y < 0 || y >= c) {
    *bad_target = 1;
    return -1;
  }
  return y;
}

template <typename T>
inline float class_weight(constant T* weight, long y, bool weighted) {
  return weighted ? float(weight[y]) : 1.0f;
}

}  // namespace

template <typename T>
kernel void multi_margin_loss(
    device T* loss [[buffer(0)]],
    constant T* x [[buffer(1)]],
    constant long* target [[buffer(2)]],
    constant T* weight [[buffer(3)]],
    device int* bad_target [[buffer(4)]],
    constant mps_ops::multi_margin_params& params [[buffer(5)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup float partials[32];
  // In registers: read through the reference after the store to
  // bad_target (which may alias it, for all the compiler knows), p was
  // loaded again for every class (H200 PTX, once the kernel was inlined
  // into its entry point: 0.69x torch's CUDA kernel, where 0.91x before).
  const mps_ops::multi_margin_params q = params;
  mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const sample_thread t = place_in_sample(params, group.y, at);
  const long i = t.sample, c = q.c;
  float sum = 0.0f;
  const long y = t.active ? checked_target(target, i, c, bad_target) : -1;
  if (y >= 0) {
    constant T* row = x + i * c;
    const float x_y = row[y], w = class_weight(weight, y, q.weighted);
    constexpr long class_run = mps_ops::elements_per_thread(sizeof(T));
    for (long first = t.first; first < c; first += class_run * t.step) {
      float values[class_run];
      load_class_run(values, row, first, t.step, c);
      _Pragma("clang loop unroll(full)")
      for (long k = 0; k < class_run; ++k) {
        const long j = first + k * t.step;
        const float z = q.margin - x_y + values[k];
        if (j < c && j != y && z > 0.0f) {
          sum += (q.p == 1 ? z : z * z) * w;
        }
      }
    }
  }
  sum = mps_ops::merge_consecutive<mps_ops::float_sum>(sum, partials, at, q.share);
  if (t.active && t.first == 0) {
    loss[i] = static_cast<T>(sum / float(c));
  }
}

template <typename T>
kernel void multi_margin_loss_backward(
    device T* grad_x [[buffer(0)]],
    constant T* grad [[buffer(1)]],
    constant T* x [[buffer(2)]],
    constant long* target [[buffer(3)]],
    constant T* weight [[buffer(4)]],
    device int* bad_target [[buffer(5)]],
    constant mps_ops::multi_margin_params& params [[buffer(6)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup float partials[32];
  // In registers before the flag's store, which may alias them on a target
  // where constant memory is generic (CUDA): else read again after it.
  const mps_ops::multi_margin_params q = params;
  mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const sample_thread t = place_in_sample(params, group.y, at);
  const long i = t.sample, c = q.c;
  float grad_out = 0.0f, target_grad = 0.0f;
  bool good = false;
  long y = 0;
  if (t.active) {
    constant T* row = x + i * c;
    device T* grad_row = grad_x + i * c;
    float values[class_block];
    load_class_block(values, row, t.first, t.step, c);
    grad_out = float(grad[q.grad_per_sample ? i : 0]);
    // Branch-free from here (a bad target reads class 0 and stores
    // nothing), so that the compiler cannot sink the row's loads below
    // the target's: the two would wait one after the other.
    const long checked = checked_target(target, i, c, bad_target);
    good = checked >= 0;
    y = good ? checked : 0;
    // As the CPU: the terms at scale, their product with grad_output last.
    const float g = q.scale;
    const float x_y = row[y], w = class_weight(weight, y, q.weighted);
    for (long first = t.first;;) {
      _Pragma("clang loop unroll(full)")
      for (uint k = 0; k < class_block; ++k) {
        const long j = first + long(k) * t.step;
        if (j < c && j != y) {
          const float z = q.margin - x_y + values[k];
          const float h = z > 0.0f ? (q.p == 1 ? g : 2.0f * g * z) * w : 0.0f;
          if (good) {
            grad_row[j] = static_cast<T>(h * grad_out);
          }
          target_grad -= h;
        }
      }
      first += long(class_block) * t.step;
      if (first >= c) break;
      load_class_block(values, row, first, t.step, c);
    }
  }
  target_grad = mps_ops::merge_consecutive<mps_ops::float_sum>(target_grad, partials, at, q.share);
  if (good && t.first == 0) {
    grad_x[i * c + y] = static_cast<T>(target_grad * grad_out);
  }
}

MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(multi_margin_loss, reduce, float, float), multi_margin_loss, float)
MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(multi_margin_loss_backward, reduce, float, float),
                    multi_margin_loss_backward, float)

// multilabel_margin_loss: a sample's targets are its target row up to the
// first -1 (a label listed twice counts twice). Per sample:
//   loss = sum over listed j, over classes k not listed, of max(0, 1 - x[j] + x[k]) / c
// and is_target[k] = 1 for listed k. One threadgroup per sample; thread k
// works on class k, so no thread needs another's result but the list length.

namespace {

// The number of listed targets: positions before the first -1.
inline long listed_count(constant long* labels, long c) {
  long count = 0;
  while (count < c && labels[count] >= 0) {
    ++count;
  }
  return count;
}

inline long occurrences(constant long* labels, long listed, long k) {
  long count = 0;
  for (long q = 0; q < listed; ++q) {
    count += labels[q] == k ? 1 : 0;
  }
  return count;
}

}  // namespace

template <typename T>
kernel void multilabel_margin_loss(
    device T* loss [[buffer(0)]],
    device T* is_target [[buffer(1)]],
    constant T* x [[buffer(2)]],
    constant long* target [[buffer(3)]],
    constant mps_ops::multilabel_margin_params& params [[buffer(4)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup float partials[32];
  mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const long i = long(group.y), c = params.c;
  constant T* row = x + i * c;
  constant long* labels = target + i * c;
  const long listed = listed_count(labels, c);
  float sum = 0.0f;
  for (long k = index; k < c; k += group_size.x) {
    const bool is_listed = occurrences(labels, listed, k) > 0;
    is_target[i * c + k] = static_cast<T>(is_listed ? 1.0f : 0.0f);
    if (is_listed) {
      continue;
    }
    for (long q = 0; q < listed; ++q) {
      const float z = 1.0f - float(row[labels[q]]) + float(row[k]);
      sum += z > 0.0f ? z : 0.0f;
    }
  }
  sum = mps_ops::merge_threadgroup<mps_ops::float_sum>(sum, partials, at);
  if (index == 0) {
    loss[i] = static_cast<T>(sum / float(c));
  }
}

// d loss / d x[k], from is_target as given (the forward's record; the CPU
// reads it, it does not recompute it): for each listed target j in list
// order, +scale where k is unmarked (is_target 0) and 1 - x[j] + x[k] > 0,
// and -scale for each unmarked m with 1 - x[k] + x[m] > 0 where j is k.
// The sum is then multiplied by grad_output, as on the CPU.
//
// Every term is +-scale, so the kernel counts them in integers and scales
// once: exact, where the CPU's running float sum rounds. The scan over m runs
// after the list loop, once per thread whose class is listed: inside the list
// loop only the one thread whose k is labels[q] would take it, so a SIMD
// group ran one 1-wide scan per listed class in it, one after another.
template <typename T>
kernel void multilabel_margin_loss_backward(
    device T* grad_x [[buffer(0)]],
    constant T* grad [[buffer(1)]],
    constant T* x [[buffer(2)]],
    constant long* target [[buffer(3)]],
    constant T* is_target [[buffer(4)]],
    constant mps_ops::multilabel_margin_params& params [[buffer(5)]],
    uint2 pos [[thread_position_in_grid]]) {
  const long k = long(pos.x), i = long(pos.y), c = params.c;
  constant T* row = x + i * c;
  constant long* labels = target + i * c;
  constant T* marked = is_target + i * c;
  const long listed = listed_count(labels, c);
  const bool k_unmarked = marked[k] == T(0);
  const float x_k = float(row[k]);
  long margins_k_violates = 0;  // listed j with k unmarked and 1 - x[j] + x[k] > 0
  long times_listed = 0;        // q with labels[q] == k
  for (long q = 0; q < listed; ++q) {
    const long j = labels[q];
    times_listed += j == k ? 1 : 0;
    margins_k_violates += (k_unmarked && 1.0f - float(row[j]) + x_k > 0.0f) ? 1 : 0;
  }
  long violating_k = 0;  // unmarked m with 1 - x[k] + x[m] > 0
  if (times_listed > 0) {
    for (long m = 0; m < c; ++m) {
      violating_k += (marked[m] == T(0) && 1.0f - x_k + float(row[m]) > 0.0f) ? 1 : 0;
    }
  }
  const float terms = float(margins_k_violates - times_listed * violating_k);
  grad_x[i * c + k] = static_cast<T>(terms * params.scale * float(grad[params.grad_per_sample ? i : 0]));
}

MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(multilabel_margin_loss, reduce, float, float),
                    multilabel_margin_loss, float)
MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(multilabel_margin_loss_backward, dense, float, float),
                    multilabel_margin_loss_backward, float)
