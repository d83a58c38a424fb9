// MSL vector types (T2, T3, T4) for the emulator: MSL sizes and alignment
// (a 3-vector occupies the space of a 4-vector), component access by x/y/z/w
// and by index, element-wise arithmetic and comparison. Conversions between
// vector types are explicit only, as in MSL.
#pragma once

namespace mps_ops_emu {

template <bool B>
struct vec_enable {};
template <>
struct vec_enable<true> {
  using type = int;
};

template <class T, int N>
struct vec_storage;

template <class T>
struct alignas(2 * sizeof(T)) vec_storage<T, 2> {
  T x, y;
};
template <class T>
struct alignas(4 * sizeof(T)) vec_storage<T, 3> {
  T x, y, z;
};
template <class T>
struct alignas(4 * sizeof(T)) vec_storage<T, 4> {
  T x, y, z, w;
};

template <class T, int N>
struct vec;

// A conversion a target does in one instruction: false where there is none
// (the element-wise conversion follows).
template <class T, class U, int N>
inline bool convert_packed(vec<T, N>&, const vec<U, N>&) {
  return false;
}

template <class T, int N>
struct vec : vec_storage<T, N> {
  using value_type = T;
  static constexpr int size = N;

  vec() = default;
  vec(T broadcast) {
    for (int i = 0; i < N; ++i) (*this)[i] = broadcast;
  }
  template <class... Ts, typename vec_enable<sizeof...(Ts) == N>::type = 0>
  vec(Ts... components) {
    T values[N] = {T(components)...};
    for (int i = 0; i < N; ++i) (*this)[i] = values[i];
  }
  template <class U>
  explicit vec(const vec<U, N>& other) {
    if (convert_packed(*this, other)) {
      return;
    }
    for (int i = 0; i < N; ++i) (*this)[i] = T(other[i]);
  }

  T& operator[](int i) { return (&this->x)[i]; }
  const T& operator[](int i) const { return (&this->x)[i]; }

  // Swizzles: the prepass rewrites `v.xy` to `v.template swz<0, 1>()`.
  template <int... I>
  struct swizzle;
  template <int... I>
  swizzle<I...> swz() {
    return swizzle<I...>(*this);
  }
  template <int... I>
  vec<T, int(sizeof...(I))> swz() const {
    return vec<T, int(sizeof...(I))>((*this)[I]...);
  }
};

#if defined(__CUDA__) && defined(__CUDA_ARCH__)
// The CUDA target: two floats to a pair of halves or bfloats in one
// cvt.rn.f16x2/bf16x2 (the first element in the low half, as MSL lays a
// vector out), where two conversions and a byte permute took three
// instructions, the conversions at a quarter of the H200's ALU rate. Rounded
// to nearest even as each alone; a NaN stays NaN, its payload not kept.
template <>
inline bool convert_packed(vec<_Float16, 2>& to, const vec<float, 2>& from) {
  const auto pair = __nvvm_ff2f16x2_rn(from.y, from.x);
  memcpy(&to, &pair, sizeof(to));
  return true;
}
template <>
inline bool convert_packed(vec<bfloat, 2>& to, const vec<float, 2>& from) {
  const auto pair = __nvvm_ff2bf16x2_rn(from.y, from.x);
  memcpy(&to, &pair, sizeof(to));
  return true;
}
#endif

// A swizzle of an lvalue vector: a value of the swizzled type (so it works
// wherever a vector does) that writes assignments back to its components.
template <class T, int N>
template <int... I>
struct vec<T, N>::swizzle : vec<T, int(sizeof...(I))> {
  using base = vec<T, int(sizeof...(I))>;
  explicit swizzle(vec<T, N>& source) : base(source[I]...), source_(&source) {}
  swizzle(const swizzle&) = default;
  swizzle& operator=(const base& value) {
    const int index[] = {I...};
    for (int k = 0; k < int(sizeof...(I)); ++k) (*source_)[index[k]] = value[k];
    static_cast<base&>(*this) = value;
    return *this;
  }
  swizzle& operator=(const swizzle& other) { return *this = static_cast<const base&>(other); }
  swizzle& operator+=(const base& v) { return *this = static_cast<const base&>(*this) + v; }
  swizzle& operator-=(const base& v) { return *this = static_cast<const base&>(*this) - v; }
  swizzle& operator*=(const base& v) { return *this = static_cast<const base&>(*this) * v; }
  swizzle& operator/=(const base& v) { return *this = static_cast<const base&>(*this) / v; }

 private:
  vec<T, N>* source_;
};

// packed_T3 and friends: no padding, alignment of T; convert to and from the
// aligned vectors implicitly.
template <class T, int N>
struct packed_vec {
  T components[N];
  packed_vec() = default;
  packed_vec(const vec<T, N>& v) {
    for (int i = 0; i < N; ++i) components[i] = v[i];
  }
  operator vec<T, N>() const {
    vec<T, N> v;
    for (int i = 0; i < N; ++i) v[i] = components[i];
    return v;
  }
  T& operator[](int i) { return components[i]; }
  const T& operator[](int i) const { return components[i]; }
};

#define MPS_OPS_EMU_VEC_BINARY(OP)                                         \
  template <class T, int N>                                                \
  vec<T, N> operator OP(const vec<T, N>& a, const vec<T, N>& b) {          \
    vec<T, N> r;                                                           \
    for (int i = 0; i < N; ++i) r[i] = a[i] OP b[i];                       \
    return r;                                                              \
  }                                                                        \
  template <class T, int N>                                                \
  vec<T, N> operator OP(const vec<T, N>& a, T b) {                         \
    return a OP vec<T, N>(b);                                              \
  }                                                                        \
  template <class T, int N>                                                \
  vec<T, N> operator OP(T a, const vec<T, N>& b) {                         \
    return vec<T, N>(a) OP b;                                              \
  }                                                                        \
  template <class T, int N>                                                \
  vec<T, N>& operator OP##=(vec<T, N>& a, const vec<T, N>& b) {            \
    return a = a OP b;                                                     \
  }
MPS_OPS_EMU_VEC_BINARY(+)
MPS_OPS_EMU_VEC_BINARY(-)
MPS_OPS_EMU_VEC_BINARY(*)
MPS_OPS_EMU_VEC_BINARY(/)
#undef MPS_OPS_EMU_VEC_BINARY

template <class T, int N>
vec<T, N> operator-(const vec<T, N>& a) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = -a[i];
  return r;
}

// Comparisons are element-wise and give bool vectors, as in MSL.
#define MPS_OPS_EMU_VEC_COMPARE(OP)                                       \
  template <class T, int N>                                               \
  vec<bool, N> operator OP(const vec<T, N>& a, const vec<T, N>& b) {      \
    vec<bool, N> r;                                                       \
    for (int i = 0; i < N; ++i) r[i] = a[i] OP b[i];                      \
    return r;                                                             \
  }
MPS_OPS_EMU_VEC_COMPARE(==)
MPS_OPS_EMU_VEC_COMPARE(!=)
MPS_OPS_EMU_VEC_COMPARE(<)
MPS_OPS_EMU_VEC_COMPARE(>)
MPS_OPS_EMU_VEC_COMPARE(<=)
MPS_OPS_EMU_VEC_COMPARE(>=)
#undef MPS_OPS_EMU_VEC_COMPARE

}  // namespace mps_ops_emu
