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
struct softmax_rule {
  static constexpr uint run() { return 2; }
  static float term(float grad, float out) { return grad * out; }
  static float gradient(float grad, float out, float sum) { return out * (grad - sum); }
};

struct log_softmax_rule {
  static constexpr uint run() { return 4; }
  static float term(float grad, float) { return grad; }
  static float gradient(float grad, float out, float sum) { return grad - exp(out) * sum; }
};

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
  const float total = mps_ops::merge_consecutive_to_all<mps_ops::double_float_sum>(sum.value(), partials, at, step).hi;
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
