// _softmax_backward_data and _log_softmax_backward_data along one dim, out
// being the forward's result (softmax, or log_softmax):
//   softmax      grad_in = out * (grad - sum(grad * out))
//   log_softmax  grad_in = grad - exp(out) * sum(grad)
// The row's sum in double-float accuracy (each thread's terms summed with
// their rounding errors carried apart, the threads' sums merged in
// double-float): where terms near the float limit cancel, a float sum
// depends on its order (the CPU's in-order one drops the ordinary terms),
// and this one keeps them in any order. The rest in float,
// rounded once to T. grad and out are contiguous and of one shape (the host
// makes them so), so one reduction layout addresses both. Rows as
// in masked_softmax.metal (SliceMapping::rows: consecutive threads per row,
// several rows per threadgroup, the row's sum reaching all of its threads):
// one pass for the sum, one for the gradient, which reads the row again
// from the cache. On Apple GPUs this replaces an MPSGraph op per softmax in
// every backward pass.
#include <metal_stdlib>
#include <mps_ops/double_float.h>
#include <mps_ops/reduction.h>
#include <mps_ops/row_walk.h>
using namespace metal;

namespace {

// Each rule's run: loads in flight together, before the run's stores (a
// store to grad_in could alias grad or out for all the compiler knows).
// softmax's sum pass reads two operands per element, log_softmax's one, so
// its runs are longer for the same bytes in flight.
// holds_row(): whether a thread keeps its sum pass's loads for the write
// (log_softmax: the sum reads grad alone, one register per element).
struct softmax_rule {
  static constexpr uint run() { return 2; }
  static constexpr bool holds_row() { return false; }
  static float term(float grad, float out) { return grad * out; }
  static float gradient(float grad, float out, float sum) { return out * (grad - sum); }
};

struct log_softmax_rule {
  static constexpr uint run() { return 4; }
  static constexpr bool holds_row() { return true; }
  static float term(float grad, float) { return grad; }
  static float gradient(float grad, float out, float sum) { return grad - exp(out) * sum; }
};

// The row's sum, in every thread of the row: this thread's and the others'.
inline float row_total(mps_ops::compensated_sum sum, threadgroup mps_ops::double_float* partials,
                       thread const mps_ops::group_position& at, uint step) {
  return mps_ops::merge_consecutive_to_all<mps_ops::double_float_sum>(sum.value(), partials, at, step).hi;
}

// log_softmax's backward over a contiguous row of up to
// elements_per_row_thread elements for each of its 32 threads (rows of 513
// to 1024: the rows mapping's share of 32): each thread keeps its grads in
// registers from the sum to the write, so grad is read once, where the
// passes of softmax_backward_rows read it again from the cache (H200,
// float32 rows of 1024: 0.78x torch's CUDA kernel, which reads each element
// once). The same terms in the same order as there. The 32 threads are
// known at compile time, so every element's offset is a constant: offsets
// kept for the write as 64-bit products spilled registers.
template <typename Rule, typename T>
inline void held_row_backward(device T* row_grad_in, constant T* row_grad, constant T* row_out, uint n,
                              threadgroup mps_ops::double_float* partials, thread const mps_ops::slice_thread& t,
                              thread const mps_ops::group_position& at) {
  constexpr uint held = mps_ops::elements_per_row_thread, step = 32, run = Rule::run();
  row_grad += t.first;
  row_out += t.first;
  row_grad_in += t.first;
  const uint own = n > t.first ? (n - t.first + step - 1) / step : 0u;  // this thread's elements
  float g[held];
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < held; ++k) {
    g[k] = k < own ? float(row_grad[k * step]) : 0.0f;
  }
  mps_ops::compensated_sum sum = mps_ops::compensated_sum::zero();
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < held; ++k) {
    sum.add(g[k]);
  }
  const float total = row_total(sum, partials, at, step);
  _Pragma("clang loop unroll(full)")
  for (uint first = 0; first < held; first += run) {
    float o[run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      o[k] = first + k < own ? float(row_out[(first + k) * step]) : 0.0f;
    }
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      if (first + k < own) {
        row_grad_in[(first + k) * step] = static_cast<T>(Rule::gradient(g[first + k], o[k], total));
      }
    }
  }
}

// Unit_stride: the row is contiguous (the layout says so for every thread),
// so an element's offset is its 32-bit index, not a 64-bit product with the
// stride per element.
template <typename Rule, bool unit_stride, typename T>
inline void softmax_backward_rows(device T* grad_in, constant T* grad, constant T* out,
                                  constant mps_ops::reduction_layout& layout,
                                  threadgroup mps_ops::double_float* partials, thread const mps_ops::slice_thread& t,
                                  thread const mps_ops::group_position& at) {
  mps_ops::row_walk row = mps_ops::walk_row(layout, t);
  if (unit_stride) {
    row.stride = 1;
  }
  constant T* row_grad = grad + row.start;
  constant T* row_out = out + row.start;
  device T* row_grad_in = grad_in + row.start;
  const uint n = row.length, step = t.step;
  constexpr uint run = Rule::run();
  mps_ops::compensated_sum sum = mps_ops::compensated_sum::zero();
  for (uint first = t.first; first < n; first += run * step) {
    float terms[run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      const uint i = first + k * step;
      terms[k] = i < n ? Rule::term(float(row_grad[row.offset(i)]), float(row_out[row.offset(i)])) : 0.0f;
    }
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      sum.add(terms[k]);
    }
  }
  const float total = row_total(sum, partials, at, step);
  for (uint first = t.first; first < n; first += run * step) {
    float g[run], o[run];
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      const uint i = first + k * step;
      g[k] = i < n ? float(row_grad[row.offset(i)]) : 0.0f;
      o[k] = i < n ? float(row_out[row.offset(i)]) : 0.0f;
    }
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < run; ++k) {
      const uint i = first + k * step;
      if (i < n) {
        row_grad_in[row.offset(i)] = static_cast<T>(Rule::gradient(g[k], o[k], total));
      }
    }
  }
}

template <typename Rule, typename T>
inline void rows_of_either_stride(device T* grad_in, constant T* grad, constant T* out,
                                  constant mps_ops::reduction_layout& layout,
                                  threadgroup mps_ops::double_float* partials, uint group,
                                  thread const mps_ops::group_position& at) {
  const mps_ops::slice_thread t = mps_ops::place_thread(layout, group, at);
  if (layout.inner_ndim == 1 && layout.inner_strides[0] == 1) {
    // (The layout's row length and the group's step: alike for every thread
    // of the group, whose barriers all must reach the same merge.)
    const uint n = uint(layout.inner_numel);
    if (Rule::holds_row() && t.step == 32 && n <= mps_ops::elements_per_row_thread * 32) {
      const mps_ops::row_walk row = mps_ops::walk_row(layout, t);
      held_row_backward<Rule>(grad_in + row.start, grad + row.start, out + row.start, row.length, partials, t, at);
      return;
    }
    softmax_backward_rows<Rule, true>(grad_in, grad, out, layout, partials, t, at);
  } else {
    softmax_backward_rows<Rule, false>(grad_in, grad, out, layout, partials, t, at);
  }
}

}  // namespace

template <typename T>
kernel void softmax_backward(
    device T* grad_in [[buffer(0)]],
    constant T* grad [[buffer(1)]],
    constant T* out [[buffer(2)]],
    constant mps_ops::reduction_layout& layout [[buffer(3)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup mps_ops::double_float partials[32];
  const mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  rows_of_either_stride<softmax_rule>(grad_in, grad, out, layout, partials, group.y, at);
}

template <typename T>
kernel void log_softmax_backward(
    device T* grad_in [[buffer(0)]],
    constant T* grad [[buffer(1)]],
    constant T* out [[buffer(2)]],
    constant mps_ops::reduction_layout& layout [[buffer(3)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint index [[thread_index_in_threadgroup]],
    uint2 group_size [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup mps_ops::double_float partials[32];
  const mps_ops::group_position at{index, group_size.x, lane, simd_group, simd_size};
  rows_of_either_stride<log_softmax_rule>(grad_in, grad, out, layout, partials, group.y, at);
}

MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, softmax_backward, reduce)
MPS_OPS_FOR_FLOATING(MPS_OPS_INSTANTIATE_FOR_TYPE, log_softmax_backward, reduce)
