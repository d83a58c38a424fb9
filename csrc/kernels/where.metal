// where(condition, self, other): self's element where condition holds, else
// other's. A pure selection, so one kernel per element width serves every
// dtype: the host views each as the unsigned type of its width (float as
// uint, half and bfloat16 as ushort, complex64 as ulong) and the kernel
// moves bits, exact for NaN payloads and signed zeros alike. The condition
// is bool, read one element at a time in the values' layout (the paired
// 2-byte layout's word loads would read it as pairs).
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
using namespace metal;

namespace mps_ops {

template <typename T>
struct where_elements {
  device T* out;
  constant bool* condition;
  constant T* self;
  constant T* other;
  template <bool Whole, typename Layout>
  void run(uint first, uint count) const {
    T a[per_thread<T>()], b[per_thread<T>()], results[per_thread<T>()];
    Layout::template load<Whole>(a, self, first, count);
    Layout::template load<Whole>(b, other, first, count);
    _Pragma("clang loop unroll(full)")
    for (uint k = 0; k < per_thread<T>(); ++k) {
      if (Whole || Layout::at(first, k) < count) {
        results[k] = condition[Layout::at(first, k)] ? a[k] : b[k];
      }
    }
    Layout::template store<Whole>(out, results, first, count);
  }
};

// The binding of elementwise.h's ternary kernels (the host's exec_elementwise).
template <typename T>
kernel void where_dense(
    device T* out [[buffer(0)]],
    constant bool* condition [[buffer(1)]],
    constant T* self [[buffer(2)]],
    constant T* other [[buffer(3)]],
    constant uint& n [[buffer(4)]],
    constant no_params& params [[buffer(5)]],
    uint thread_index [[thread_position_in_grid]]) {
  const where_elements<T> elements{out, condition, self, other};
  dense_thread<T, T>(elements, n, thread_index);
}

template <typename T>
kernel void where_strided(
    device char* out [[buffer(0)]],
    constant char* condition [[buffer(1)]],
    constant char* self [[buffer(2)]],
    constant char* other [[buffer(3)]],
    constant uint* sizes [[buffer(4)]],
    constant int* strides [[buffer(5)]],
    constant uint& ndim [[buffer(6)]],
    constant no_params& params [[buffer(7)]],
    uint2 pos [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  int offsets[4];
  row_offsets<4>(pos.y, sizes, strides, ndim, offsets);
  const uint inner = sizes[0];
  T a[per_thread<T>()], b[per_thread<T>()];
  load_row(a, self, offsets[2], strides[2 * ndim], pos.x, grid.x, inner);
  load_row(b, other, offsets[3], strides[3 * ndim], pos.x, grid.x, inner);
  _Pragma("clang loop unroll(full)")
  for (uint k = 0; k < per_thread<T>(); ++k) {
    const uint x = pos.x + k * grid.x;
    if (x < inner) {
      const bool holds = element_at<bool>(condition, offsets[1] + int(x) * strides[ndim]);
      element_at<T>(out, offsets[0] + int(x) * strides[0]) = holds ? a[k] : b[k];
    }
  }
}

}  // namespace mps_ops

#define REGISTER_WHERE(T)                                                               \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(where, dense, T, T), mps_ops::where_dense, T) \
  MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(where, strided, T, T), mps_ops::where_strided, T)

REGISTER_WHERE(uchar)
REGISTER_WHERE(ushort)
REGISTER_WHERE(uint)
REGISTER_WHERE(ulong)
