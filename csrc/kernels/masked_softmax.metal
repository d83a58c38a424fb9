// _masked_softmax and its backward along one dim. Input, mask and output
// are contiguous and of one shape (the host expands the (L, L) and (B, L)
// mask types), so one reduction layout addresses all three. A True mask
// element counts as -inf, as on the CPU: it gets 0, and a row with nothing
// unmasked is NaN throughout. In float:
//   forward   out = exp(v - max) * (1 / sum exp(v - max)), v = mask ? -inf : x
//   backward  grad_in = mask ? 0 : out * (grad - sum over unmasked of grad * out)
// Rows mapping (SliceMapping::rows): threads_per_slice consecutive threads
// per row, about 32 elements each, several rows per threadgroup; each row's
// max, sum and dot reach all of its threads (merge_consecutive_to_all: xor
// shuffles alone up to 32 threads per row). The passes read the row again
// (from the cache): values kept in registers instead took 64 registers and
// left the H100 at half occupancy, slower than one threadgroup per row, which
// itself spent 3x torch's instructions per element on barriers, merges and
// 64-bit offsets.
#include <metal_stdlib>
#include <mps_ops/reduction.h>
#include <mps_ops/row_walk.h>
using namespace metal;
using mps_ops::row_walk;
using mps_ops::walk_row;

namespace {

// Elements loaded together: a run of loads in flight per thread, and where
// loads and stores alternate, the loads of a run before its stores (a store
// to the output could alias the inputs for all the compiler knows, so a load
// after a store waits for it). The backward loads three operands per
// element: runs of 4 took 49 registers there (32 with 2).
constant constexpr uint run = 4;
constant constexpr uint backward_run = 2;

// `value` where the mask byte is 0, `masked_value` where it is 1, in bits
// and without a select: compilers turn a select of a loaded value into a
// branch around the value's load, which then waits for the mask's (on an
// H200, two memory round trips per element in a row and one load in flight
// per thread). A bool tensor's bytes are 0 or 1.
inline float unless_masked(float value, uchar mask_byte, float masked_value) {
  const uint bits = as_type<uint>(value);
  return as_type<float>(bits + (as_type<uint>(masked_value) - bits) * uint(mask_byte));
}

// v[k] = the k-th element of the thread's run from `first` (mask ? -inf : x),
// -inf past the row's end; `offset` is the run's first element's, `jump` the
// offset from one element of the run to the next (each element's offset
// steps by one 64-bit add: as i * stride, the H200's code took some six
// instructions per element).
template <typename T>
inline void load_run(thread float* v, constant T* in, constant uchar* mask, uint first, uint step, uint n,
                     long offset, long jump) {
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < run; ++k) {
    v[k] = -numeric_limits<float>::infinity();
    if (first + k * step < n) {
      v[k] = unless_masked(float(in[offset]), mask[offset], -numeric_limits<float>::infinity());
    }
    offset += jump;
  }
}

}  // namespace

template <typename T>
kernel void masked_softmax(
    device T* out [[buffer(0)]],
    constant T* in [[buffer(1)]],
    constant bool* mask [[buffer(2)]],
    constant mps_ops::reduction_layout& layout [[buffer(3)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup float partials[32];
  const mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const mps_ops::slice_thread t = mps_ops::place_thread(layout, group.y, at);
  const row_walk row = walk_row(layout, t);
  constant T* row_in = in + row.start;
  // The mask's bytes (unless_masked).
  constant uchar* row_mask = reinterpret_cast<constant uchar*>(mask) + row.start;
  device T* row_out = out + row.start;
  const uint n = row.length, step = t.step;
  const long jump = long(step) * row.stride, run_jump = long(run) * jump;
  const long first_offset = row.offset(t.first);

  float row_max = mps_ops::float_max::identity();
  long offset = first_offset;
  for (uint first = t.first; first < n; first += run * step, offset += run_jump) {
    float v[run];
    load_run(v, row_in, row_mask, first, step, n, offset, jump);
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      row_max = mps_ops::float_max::merge(row_max, v[k]);
    }
  }
  row_max = mps_ops::merge_consecutive_to_all<mps_ops::float_max>(row_max, partials, at, step);

  // Past the row's end v is -inf, whose term is 0 below a finite max; a
  // max of -inf (nothing unmasked) or +inf makes the row NaN either way.
  float sum = 0.0f;
  offset = first_offset;
  for (uint first = t.first; first < n; first += run * step, offset += run_jump) {
    float v[run];
    load_run(v, row_in, row_mask, first, step, n, offset, jump);
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      sum += exp(v[k] - row_max);
    }
  }
  // Times the reciprocal of the sum, as the CPU's softmax does (one
  // division per row, not per element).
  const float total = mps_ops::merge_consecutive_to_all<mps_ops::float_sum>(sum, partials, at, step);
  const float inverse_total = 1.0f / total;

  offset = first_offset;
  for (uint first = t.first; first < n; first += run * step, offset += run_jump) {
    float v[run];
    load_run(v, row_in, row_mask, first, step, n, offset, jump);
    long offset_k = offset;
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      if (first + k * step < n) {
        row_out[offset_k] = static_cast<T>(exp(v[k] - row_max) * inverse_total);
      }
      offset_k += jump;
    }
  }
}

// Two passes over each row: the dot of grad and out over unmasked elements,
// then the gradient, both in runs of loads.
template <typename T>
kernel void masked_softmax_backward(
    device T* grad_in [[buffer(0)]],
    constant T* grad [[buffer(1)]],
    constant T* out [[buffer(2)]],
    constant bool* mask [[buffer(3)]],
    constant mps_ops::reduction_layout& layout [[buffer(4)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup float partials[32];
  const mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  const mps_ops::slice_thread t = mps_ops::place_thread(layout, group.y, at);
  const row_walk row = walk_row(layout, t);
  constant T* row_grad = grad + row.start;
  constant T* row_out = out + row.start;
  constant uchar* row_mask = reinterpret_cast<constant uchar*>(mask) + row.start;
  device T* row_grad_in = grad_in + row.start;
  const uint n = row.length, step = t.step;
  float dot = 0.0f;
  for (uint first = t.first; first < n; first += backward_run * step) {
    float terms[backward_run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < backward_run; ++k) {
      const uint i = first + k * step;
      terms[k] = 0.0f;
      if (i < n) {
        const long at_i = row.offset(i);
        terms[k] = unless_masked(float(row_grad[at_i]) * float(row_out[at_i]), row_mask[at_i], 0.0f);
      }
    }
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < backward_run; ++k) {
      dot += terms[k];
    }
  }
  const float d = mps_ops::merge_consecutive_to_all<mps_ops::float_sum>(dot, partials, at, step);
  for (uint first = t.first; first < n; first += backward_run * step) {
    float o[backward_run], g[backward_run];
    uchar masked[backward_run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < backward_run; ++k) {
      const uint i = first + k * step;
      if (i < n) {
        const long at_i = row.offset(i);
        o[k] = float(row_out[at_i]);
        g[k] = float(row_grad[at_i]);
        masked[k] = row_mask[at_i];
      }
    }
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < backward_run; ++k) {
      const uint i = first + k * step;
      if (i < n) {
        // The CPU subtracts in double; where the float difference overflows,
        // out * grad - out * d stays finite as the CPU's result does.
        const float difference = g[k] - d;
        const float value = isfinite(difference) || !isfinite(g[k]) || !isfinite(d) ? o[k] * difference
                                                                                   : o[k] * g[k] - o[k] * d;
        row_grad_in[row.offset(i)] = static_cast<T>(unless_masked(value, masked[k], 0.0f));
      }
    }
  }
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, masked_softmax, reduce)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, masked_softmax_backward, reduce)
