// The vector forms of the metal:: library, integer and bit functions, the
// relational functions (all, any, select, isnan on vectors), geometric
// functions, and metal::array.
#pragma once

namespace metal {
namespace math_impl {

#define MPS_OPS_EMU_VEC_UNARY(NAME)                                      \
  template <class T, int N>                                              \
  ::mps_ops_emu::vec<T, N> NAME(const ::mps_ops_emu::vec<T, N>& v) {     \
    ::mps_ops_emu::vec<T, N> r;                                          \
    for (int i = 0; i < N; ++i) r[i] = NAME(v[i]);                       \
    return r;                                                            \
  }
MPS_OPS_EMU_VEC_UNARY(exp)
MPS_OPS_EMU_VEC_UNARY(exp2)
MPS_OPS_EMU_VEC_UNARY(log)
MPS_OPS_EMU_VEC_UNARY(log2)
MPS_OPS_EMU_VEC_UNARY(log10)
MPS_OPS_EMU_VEC_UNARY(sqrt)
MPS_OPS_EMU_VEC_UNARY(rsqrt)
MPS_OPS_EMU_VEC_UNARY(sin)
MPS_OPS_EMU_VEC_UNARY(cos)
MPS_OPS_EMU_VEC_UNARY(tan)
MPS_OPS_EMU_VEC_UNARY(tanh)
MPS_OPS_EMU_VEC_UNARY(floor)
MPS_OPS_EMU_VEC_UNARY(ceil)
MPS_OPS_EMU_VEC_UNARY(trunc)
MPS_OPS_EMU_VEC_UNARY(round)
MPS_OPS_EMU_VEC_UNARY(fabs)
MPS_OPS_EMU_VEC_UNARY(abs)
#undef MPS_OPS_EMU_VEC_UNARY

#define MPS_OPS_EMU_VEC_BINARY_FN(NAME)                                                      \
  template <class T, int N>                                                                  \
  ::mps_ops_emu::vec<T, N> NAME(const ::mps_ops_emu::vec<T, N>& a,                           \
                                const ::mps_ops_emu::vec<T, N>& b) {                         \
    ::mps_ops_emu::vec<T, N> r;                                                              \
    for (int i = 0; i < N; ++i) r[i] = NAME(a[i], b[i]);                                     \
    return r;                                                                                \
  }
MPS_OPS_EMU_VEC_BINARY_FN(pow)
MPS_OPS_EMU_VEC_BINARY_FN(fmin)
MPS_OPS_EMU_VEC_BINARY_FN(fmax)
MPS_OPS_EMU_VEC_BINARY_FN(min)
MPS_OPS_EMU_VEC_BINARY_FN(max)
MPS_OPS_EMU_VEC_BINARY_FN(atan2)
MPS_OPS_EMU_VEC_BINARY_FN(fmod)
#undef MPS_OPS_EMU_VEC_BINARY_FN

template <class T, int N>
::mps_ops_emu::vec<T, N> clamp(const ::mps_ops_emu::vec<T, N>& x, const ::mps_ops_emu::vec<T, N>& lo,
                               const ::mps_ops_emu::vec<T, N>& hi) {
  return min(max(x, lo), hi);
}

template <class T, int N>
::mps_ops_emu::vec<T, N> fma(const ::mps_ops_emu::vec<T, N>& a, const ::mps_ops_emu::vec<T, N>& b,
                             const ::mps_ops_emu::vec<T, N>& c) {
  ::mps_ops_emu::vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = fma(a[i], b[i], c[i]);
  return r;
}

template <class T, int N>
T dot(const ::mps_ops_emu::vec<T, N>& a, const ::mps_ops_emu::vec<T, N>& b) {
  T s = T(0);
  for (int i = 0; i < N; ++i) s = s + a[i] * b[i];
  return s;
}
template <class T, int N>
T length(const ::mps_ops_emu::vec<T, N>& v) {
  return sqrt(dot(v, v));
}
template <class T, int N>
::mps_ops_emu::vec<T, N> normalize(const ::mps_ops_emu::vec<T, N>& v) {
  return v * (T(1) / length(v));
}

// Relational functions.
template <int N>
bool all(const ::mps_ops_emu::vec<bool, N>& v) {
  for (int i = 0; i < N; ++i)
    if (!v[i]) return false;
  return true;
}
template <int N>
bool any(const ::mps_ops_emu::vec<bool, N>& v) {
  for (int i = 0; i < N; ++i)
    if (v[i]) return true;
  return false;
}
inline bool all(bool v) { return v; }
inline bool any(bool v) { return v; }
template <class T, int N>
::mps_ops_emu::vec<T, N> select(const ::mps_ops_emu::vec<T, N>& a, const ::mps_ops_emu::vec<T, N>& b,
                                const ::mps_ops_emu::vec<bool, N>& c) {
  ::mps_ops_emu::vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = c[i] ? b[i] : a[i];
  return r;
}
template <class T, int N>
::mps_ops_emu::vec<bool, N> isnan(const ::mps_ops_emu::vec<T, N>& v) {
  ::mps_ops_emu::vec<bool, N> r;
  for (int i = 0; i < N; ++i) r[i] = isnan(v[i]);
  return r;
}

// Integer and bit functions (unsigned arithmetic, as the GPU's).
template <class T>
T popcount(T x) {
  return T(__builtin_popcountll(static_cast<unsigned long long>(x) &
                                (~0ull >> (64 - 8 * sizeof(T)))));
}
template <class T>
T clz(T x) {
  const unsigned long long v = static_cast<unsigned long long>(x) & (~0ull >> (64 - 8 * sizeof(T)));
  return T(v == 0 ? 8 * sizeof(T) : __builtin_clzll(v) - (64 - 8 * sizeof(T)));
}
template <class T>
T ctz(T x) {
  const unsigned long long v = static_cast<unsigned long long>(x) & (~0ull >> (64 - 8 * sizeof(T)));
  return T(v == 0 ? 8 * sizeof(T) : __builtin_ctzll(v));
}
template <class T>
T reverse_bits(T x) {
  T r = 0;
  for (unsigned i = 0; i < 8 * sizeof(T); ++i) r = T(r | (((x >> i) & T(1)) << (8 * sizeof(T) - 1 - i)));
  return r;
}
template <class T>
T rotate(T x, T by) {
  constexpr unsigned bits = 8 * sizeof(T);
  const unsigned s = unsigned(by) % bits;
  using U = unsigned long long;
  const U mask = ~0ull >> (64 - bits);
  const U v = U(x) & mask;
  return T(s == 0 ? v : ((v << s) | (v >> (bits - s))) & mask);
}
template <class T>
T extract_bits(T x, uint offset, uint bits) {
  if (bits == 0) return T(0);
  using U = unsigned long long;
  const U v = (U(x) >> offset) & (bits >= 64 ? ~0ull : ((1ull << bits) - 1));
  return T(v);
}
inline uint mulhi(uint a, uint b) { return uint((uint64_t(a) * uint64_t(b)) >> 32); }
inline int mulhi(int a, int b) { return int((int64_t(a) * int64_t(b)) >> 32); }
template <class T>
T absdiff(T a, T b) {
  return a > b ? T(a - b) : T(b - a);
}

}  // namespace math_impl

template <class T, unsigned N>
struct array {
  T elements[N];
  T& operator[](unsigned i) { return elements[i]; }
  const T& operator[](unsigned i) const { return elements[i]; }
  static constexpr unsigned size() { return N; }
};

}  // namespace metal
