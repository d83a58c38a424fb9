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

MPS_OPS_FOR_ALL(REGISTER_UNARY_OP_SAME_TYPE, copy)
