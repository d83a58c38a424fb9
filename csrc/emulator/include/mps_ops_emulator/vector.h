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
    for (int i = 0; i < N; ++i) (*this)[i] = T(other[i]);
  }

  T& operator[](int i) { return (&this->x)[i]; }
  const T& operator[](int i) const { return (&this->x)[i]; }
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
bool all_equal(const vec<T, N>& a, const vec<T, N>& b) {
  for (int i = 0; i < N; ++i)
    if (!(a[i] == b[i])) return false;
  return true;
}

}  // namespace mps_ops_emu
