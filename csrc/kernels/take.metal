// torch.take: out[i] = self.flatten()[index[i]], negative indices counting
// from the end. self may be strided: its logical (row-major) position is
// decomposed over its sizes and mapped through its byte strides. The host has
// checked every index is in range and made out and index contiguous.
#include <metal_stdlib>
#include <mps_ops/types.h>
using namespace metal;

template <typename T>
kernel void take(device T* out [[buffer(0)]],
                 constant long* index [[buffer(1)]],
                 constant char* self [[buffer(2)]],
                 constant long* sizes [[buffer(3)]],
                 constant long* strides [[buffer(4)]],
                 constant uint& ndim [[buffer(5)]],
                 constant long& numel [[buffer(6)]],
                 uint i [[thread_position_in_grid]]) {
  long flat = index[i];
  if (flat < 0) {
    flat += numel;
  }
  long offset = 0;
  for (int d = int(ndim) - 1; d >= 0; --d) {
    offset += (flat % sizes[d]) * strides[d];
    flat /= sizes[d];
  }
  out[i] = *reinterpret_cast<constant T*>(self + offset);
}

#define REGISTER_TAKE(T) \
  template [[host_name("take_dense_" #T "_" #T)]] [[kernel]] decltype(take<T>) take<T>;
REGISTER_TAKE(bool)
REGISTER_TAKE(uchar)
REGISTER_TAKE(char)
REGISTER_TAKE(short)
REGISTER_TAKE(int)
REGISTER_TAKE(long)
REGISTER_TAKE(half)
REGISTER_TAKE(bfloat)
REGISTER_TAKE(float)
