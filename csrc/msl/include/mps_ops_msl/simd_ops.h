// What MSL's barriers and SIMD-group functions mean, the same for every
// target: the barriers' memory flags, and the combining operations of the
// reductions and scans (simd_sum, simd_prefix_exclusive_product, ...), which
// each target's metal_simd.h applies to lanes in lane order.
#pragma once

namespace metal {

enum class mem_flags : unsigned {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
constexpr mem_flags operator|(mem_flags a, mem_flags b) {
  return mem_flags(unsigned(a) | unsigned(b));
}

}  // namespace metal

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
