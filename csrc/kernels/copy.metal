// An element copy through any layout: the kernel of the ops that are a
// strided view copied out (channel_shuffle, narrow_copy). The host builds the
// view; the element-wise machinery reads it in place.
#include <metal_stdlib>
#include <mps_ops/elementwise.h>
using namespace metal;

struct copy_functor {
  template <typename T>
  T operator()(T x) const {
    return x;
  }
};

#define REGISTER_COPY(T) REGISTER_UNARY_OP(copy, T, T)
REGISTER_COPY(bool)
REGISTER_COPY(uchar)
REGISTER_COPY(char)
REGISTER_COPY(short)
REGISTER_COPY(int)
REGISTER_COPY(long)
REGISTER_COPY(ushort)
REGISTER_COPY(uint)
REGISTER_COPY(ulong)
REGISTER_COPY(half)
REGISTER_COPY(bfloat)
REGISTER_COPY(float)
