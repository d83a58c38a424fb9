// What MSL's barriers and SIMD-group functions mean, the same for every
// target: the barriers' memory flags, and the combining operations of the
// reductions and scans (simd_sum, simd_prefix_exclusive_product, ...), which
// each target's metal_simd.h applies to lanes in lane order.
#pragma once

#include "mem_flags.h"

namespace mps_ops_msl {

struct op_sum {
  template <class T> static T apply(T a, T b) { return a + b; }
  template <class T> static T identity() { return T(0); }
};
struct op_product {
  template <class T> static T apply(T a, T b) { return a * b; }
  template <class T> static T identity() { return T(1); }
};
struct op_min {
  template <class T> static T apply(T a, T b) { return metal::min(a, b); }
};
struct op_max {
  template <class T> static T apply(T a, T b) { return metal::max(a, b); }
};
struct op_and {
  template <class T> static T apply(T a, T b) { return a & b; }
};
struct op_or {
  template <class T> static T apply(T a, T b) { return a | b; }
};
struct op_xor {
  template <class T> static T apply(T a, T b) { return a ^ b; }
};

}  // namespace mps_ops_msl
