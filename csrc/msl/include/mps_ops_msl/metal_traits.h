// metal:: type traits and numeric_limits as MSL provides them, written without
// the C++ standard library (see metal_stdlib.h for why). half and bfloat are
// floating-point types here, as in MSL.
#pragma once

namespace metal {

template <class T, T v>
struct integral_constant {
  static constexpr T value = v;
  constexpr operator T() const { return v; }
};
using true_type = integral_constant<bool, true>;
using false_type = integral_constant<bool, false>;

template <class A, class B>
struct is_same : false_type {};
template <class A>
struct is_same<A, A> : true_type {};
template <class A, class B>
constexpr bool is_same_v = is_same<A, B>::value;

template <bool B, class T = void>
struct enable_if {};
template <class T>
struct enable_if<true, T> {
  using type = T;
};
template <bool B, class T = void>
using enable_if_t = typename enable_if<B, T>::type;

template <bool B, class T, class F>
struct conditional {
  using type = T;
};
template <class T, class F>
struct conditional<false, T, F> {
  using type = F;
};
template <bool B, class T, class F>
using conditional_t = typename conditional<B, T, F>::type;

template <class T> struct remove_const { using type = T; };
template <class T> struct remove_const<const T> { using type = T; };
template <class T> struct remove_volatile { using type = T; };
template <class T> struct remove_volatile<volatile T> { using type = T; };
template <class T>
struct remove_cv {
  using type = typename remove_volatile<typename remove_const<T>::type>::type;
};
template <class T>
using remove_cv_t = typename remove_cv<T>::type;
template <class T> struct remove_reference { using type = T; };
template <class T> struct remove_reference<T&> { using type = T; };
template <class T> struct remove_reference<T&&> { using type = T; };
template <class T>
using remove_reference_t = typename remove_reference<T>::type;

template <class T>
T&& declval() noexcept;

namespace detail {
template <class T> struct is_floating_point : false_type {};
template <> struct is_floating_point<float> : true_type {};
template <> struct is_floating_point<half> : true_type {};
template <> struct is_floating_point<bfloat> : true_type {};
template <class T> struct is_integral : false_type {};
template <> struct is_integral<bool> : true_type {};
template <> struct is_integral<char> : true_type {};
template <> struct is_integral<signed char> : true_type {};
template <> struct is_integral<uchar> : true_type {};
template <> struct is_integral<short> : true_type {};
template <> struct is_integral<ushort> : true_type {};
template <> struct is_integral<int> : true_type {};
template <> struct is_integral<uint> : true_type {};
template <> struct is_integral<long> : true_type {};
template <> struct is_integral<ulong> : true_type {};
}  // namespace detail

template <class T>
struct is_floating_point : detail::is_floating_point<remove_cv_t<T>> {};
template <class T>
constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T>
struct is_integral : detail::is_integral<remove_cv_t<T>> {};
template <class T>
constexpr bool is_integral_v = is_integral<T>::value;
template <class T>
struct is_arithmetic
    : integral_constant<bool, is_integral_v<T> || is_floating_point_v<T>> {};
template <class T>
constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T>
struct is_signed
    : integral_constant<bool, is_floating_point_v<T> ||
                                  (is_integral_v<T> && T(-1) < T(0))> {};
template <class T>
constexpr bool is_signed_v = is_signed<T>::value;
template <class T>
struct is_unsigned
    : integral_constant<bool, is_integral_v<T> && !(T(-1) < T(0))> {};
template <class T>
constexpr bool is_unsigned_v = is_unsigned<T>::value;

template <class T>
struct numeric_limits;

template <class T, T Lowest, T Max>
struct integer_limits {
  static constexpr bool is_specialized = true;
  static constexpr bool is_integer = true;
  static constexpr T lowest() { return Lowest; }
  static constexpr T min() { return Lowest; }
  static constexpr T max() { return Max; }
};
template <> struct numeric_limits<bool> : integer_limits<bool, false, true> {};
template <> struct numeric_limits<char> : integer_limits<char, -128, 127> {};
template <> struct numeric_limits<uchar> : integer_limits<uchar, 0, 255> {};
template <> struct numeric_limits<short> : integer_limits<short, -32768, 32767> {};
template <> struct numeric_limits<ushort> : integer_limits<ushort, 0, 65535> {};
template <> struct numeric_limits<int> : integer_limits<int, -2147483647 - 1, 2147483647> {};
template <> struct numeric_limits<uint> : integer_limits<uint, 0u, 4294967295u> {};
template <> struct numeric_limits<long>
    : integer_limits<long, -9223372036854775807L - 1, 9223372036854775807L> {};
template <> struct numeric_limits<ulong> : integer_limits<ulong, 0ul, 18446744073709551615ul> {};

template <>
struct numeric_limits<float> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_integer = false;
  static constexpr float lowest() { return -__FLT_MAX__; }
  static constexpr float min() { return __FLT_MIN__; }
  static constexpr float max() { return __FLT_MAX__; }
  static constexpr float epsilon() { return __FLT_EPSILON__; }
  static constexpr float denorm_min() { return __FLT_DENORM_MIN__; }
  static constexpr float infinity() { return __builtin_inff(); }
  static constexpr float quiet_NaN() { return __builtin_nanf(""); }
};

template <>
struct numeric_limits<half> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_integer = false;
  static constexpr half lowest() { return half(-65504.0f); }
  static constexpr half min() { return half(6.103515625e-05f); }
  static constexpr half max() { return half(65504.0f); }
  static constexpr half epsilon() { return half(0.0009765625f); }
  static constexpr half denorm_min() { return half(5.9604644775390625e-08f); }
  static constexpr half infinity() { return half(__builtin_inff()); }
  static constexpr half quiet_NaN() { return half(__builtin_nanf("")); }
};

template <>
struct numeric_limits<bfloat> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_integer = false;
  static bfloat lowest() { return bfloat::from_bits(0xff7f); }
  static bfloat min() { return bfloat::from_bits(0x0080); }
  static bfloat max() { return bfloat::from_bits(0x7f7f); }
  static bfloat epsilon() { return bfloat::from_bits(0x3c00); }
  static bfloat denorm_min() { return bfloat::from_bits(0x0001); }
  static bfloat infinity() { return bfloat::from_bits(0x7f80); }
  static bfloat quiet_NaN() { return bfloat::from_bits(0x7fc0); }
};

template <class To, class From>
To as_type(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "as_type needs types of one size");
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}

}  // namespace metal

using metal::as_type;
