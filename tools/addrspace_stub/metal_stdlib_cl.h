// <metal_stdlib> stand-in for the address-space check (tools/check_address_spaces.py).
//
// The check compiles each preprocessed .metal file as C++ for OpenCL 2021
// (clang -x clcpp -cl-std=clc++2021 -cl-no-stdinc) with the generic address
// space switched off, so that, as in MSL, a pointer or reference written
// without an address space is a `thread` one. This header comes first: it maps
// MSL's address-space keywords onto OpenCL's and declares the part of the
// metal:: library the kernels use, with MSL's address spaces in every
// signature. Declarations only where a body is not needed: nothing here is
// ever run, it only has to type-check.
//
// Things that needed care (the tool's docstring lists the resulting limits):
// * bfloat is `long double`: a built-in arithmetic type distinct from float
//   and half, as MSL's bfloat is. A class would not do: a class object in the
//   constant address space cannot be copied through an implicitly declared
//   (thread) copy constructor, so every `constant bfloat&` read would fail.
// * vectors are clang ext_vector types (built-in, so they copy out of every
//   address space). Their MSL constructors `float4(a, b, c, d)` are
//   rewritten by the tool into calls of metal::cl_detail::make_vector<float4>
//   because OpenCL C++ has no such constructors. clang has no bool ext vectors:
//   boolN are `signed char` vectors here (distinct from charN), so a vector
//   comparison (intN in OpenCL) does not convert to boolN.
// * static constexpr members and variable templates are `__constant`, as in
//   Apple's headers: a program-scope variable must be constant.
// * kernels' own structs get defaulted copies between address spaces from the
//   tool, not from here.
// * every function takes scalars and vectors by value, never `const T&`:
//   clang materializes temporaries in no address space, and a thread (private)
//   reference cannot bind them.
// * OpenCL reserves identifiers that MSL code may use (local, global, generic,
//   pipe, read_write, ...) and predeclares types under MSL's names (atomic_int,
//   atomic_uint, ...): they are renamed below by macros, so the stand-in's own
//   declarations of MSL's atomic_int etc. get the renamed spelling too.
#pragma once

#pragma OPENCL EXTENSION cl_khr_fp16 : enable

// ---- MSL keywords -> OpenCL C++ -------------------------------------------
#define device __global
#define constant __constant
#define threadgroup __local
#define thread __private
// Kernel functions become ordinary functions (an OpenCL kernel cannot be a
// template); their parameter address spaces are checked by the tool itself.
#define kernel
#define vertex
#define fragment

// Identifiers OpenCL C++ reserves and MSL does not.
#define local msl_identifier_local
#define global msl_identifier_global
#define generic msl_identifier_generic
#define pipe msl_identifier_pipe
#define read_only msl_identifier_read_only
#define write_only msl_identifier_write_only
#define read_write msl_identifier_read_write
#define addrspace_cast msl_identifier_addrspace_cast
#define vec_step msl_identifier_vec_step
#define image1d_t msl_identifier_image1d_t
#define image1d_array_t msl_identifier_image1d_array_t
#define image1d_buffer_t msl_identifier_image1d_buffer_t
#define image2d_t msl_identifier_image2d_t
#define image2d_array_t msl_identifier_image2d_array_t
#define image3d_t msl_identifier_image3d_t
// Types clang predeclares in OpenCL 2.0+ even with -cl-no-stdinc.
#define atomic_int msl_identifier_atomic_int
#define atomic_uint msl_identifier_atomic_uint
#define atomic_long msl_identifier_atomic_long
#define atomic_ulong msl_identifier_atomic_ulong
#define atomic_float msl_identifier_atomic_float
#define atomic_double msl_identifier_atomic_double
#define atomic_half msl_identifier_atomic_half
#define atomic_flag msl_identifier_atomic_flag
#define atomic_intptr_t msl_identifier_atomic_intptr_t
#define atomic_uintptr_t msl_identifier_atomic_uintptr_t
#define atomic_size_t msl_identifier_atomic_size_t
#define atomic_ptrdiff_t msl_identifier_atomic_ptrdiff_t
#define sampler_t msl_identifier_sampler_t
#define event_t msl_identifier_event_t
#define clk_event_t msl_identifier_clk_event_t
#define queue_t msl_identifier_queue_t

// ---- scalar types ----------------------------------------------------------
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef long double bfloat;  // see above: a distinct built-in floating type
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;

// ---- vector types ----------------------------------------------------------
#define MSL_CL_VECTOR(T, NAME)                                  \
  typedef T NAME##2 __attribute__((ext_vector_type(2)));        \
  typedef T NAME##3 __attribute__((ext_vector_type(3)));        \
  typedef T NAME##4 __attribute__((ext_vector_type(4)));
MSL_CL_VECTOR(signed char, bool)
MSL_CL_VECTOR(char, char)
MSL_CL_VECTOR(uchar, uchar)
MSL_CL_VECTOR(short, short)
MSL_CL_VECTOR(ushort, ushort)
MSL_CL_VECTOR(int, int)
MSL_CL_VECTOR(uint, uint)
MSL_CL_VECTOR(long, long)
MSL_CL_VECTOR(ulong, ulong)
MSL_CL_VECTOR(half, half)
MSL_CL_VECTOR(bfloat, bfloat)
MSL_CL_VECTOR(float, float)
#undef MSL_CL_VECTOR

// ---- constants -------------------------------------------------------------
#define INFINITY __builtin_inff()
#define HUGE_VALF __builtin_inff()
#define NAN __builtin_nanf("")
#define MAXFLOAT 3.40282347e+38f
#define FLT_MAX 3.40282347e+38f
#define FLT_MIN 1.17549435e-38f
#define FLT_EPSILON 1.1920929e-07f
#define M_E_F 2.71828183f
#define M_LOG2E_F 1.44269504f
#define M_LOG10E_F 0.434294482f
#define M_LN2_F 0.693147181f
#define M_LN10_F 2.30258509f
#define M_PI_F 3.14159265f
#define M_PI_2_F 1.57079633f
#define M_PI_4_F 0.785398163f
#define M_1_PI_F 0.318309886f
#define M_2_PI_F 0.636619772f
#define M_2_SQRTPI_F 1.12837917f
#define M_SQRT2_F 1.41421356f
#define M_SQRT1_2_F 0.707106781f

namespace metal {

template <class T, int N>
using vec = T __attribute__((ext_vector_type(N)));

// ---- type traits -----------------------------------------------------------
template <class T, T v>
struct integral_constant {
  static constexpr __constant T value = v;
  constexpr operator T() const { return v; }
};
typedef integral_constant<bool, true> true_type;
typedef integral_constant<bool, false> false_type;

template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};
template <class A, class B> constexpr __constant bool is_same_v = is_same<A, B>::value;

template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;

template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;

template <class T> struct remove_const { typedef T type; };
template <class T> struct remove_const<const T> { typedef T type; };
template <class T> struct remove_volatile { typedef T type; };
template <class T> struct remove_volatile<volatile T> { typedef T type; };
template <class T> struct remove_cv {
  typedef typename remove_volatile<typename remove_const<T>::type>::type type;
};
template <class T> using remove_cv_t = typename remove_cv<T>::type;
template <class T> struct remove_reference { typedef T type; };
template <class T> struct remove_reference<T&> { typedef T type; };
template <class T> struct remove_reference<T&&> { typedef T type; };
template <class T> using remove_reference_t = typename remove_reference<T>::type;
// Address spaces are qualifiers: strip them like cv-qualifiers.
template <class T> struct remove_address_space { typedef T type; };
template <class T> struct remove_address_space<__global T> { typedef T type; };
template <class T> struct remove_address_space<__constant T> { typedef T type; };
template <class T> struct remove_address_space<__local T> { typedef T type; };
template <class T> struct remove_address_space<__private T> { typedef T type; };
template <class T> using remove_address_space_t = typename remove_address_space<T>::type;

template <class T> T&& declval() noexcept;

namespace cl_detail {
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
template <class T> struct is_vector : false_type {};
template <class T, int N> struct is_vector<T __attribute__((ext_vector_type(N)))> : true_type {};
}  // namespace cl_detail

template <class T>
struct is_floating_point : cl_detail::is_floating_point<remove_cv_t<remove_address_space_t<T>>> {};
template <class T> constexpr __constant bool is_floating_point_v = is_floating_point<T>::value;
template <class T>
struct is_integral : cl_detail::is_integral<remove_cv_t<remove_address_space_t<T>>> {};
template <class T> constexpr __constant bool is_integral_v = is_integral<T>::value;
template <class T>
struct is_arithmetic : integral_constant<bool, is_integral_v<T> || is_floating_point_v<T>> {};
template <class T> constexpr __constant bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T> struct is_scalar : is_arithmetic<T> {};
template <class T> constexpr __constant bool is_scalar_v = is_scalar<T>::value;
template <class T>
struct is_signed
    : integral_constant<bool, is_floating_point_v<T> || (is_integral_v<T> && T(-1) < T(0))> {};
template <class T> constexpr __constant bool is_signed_v = is_signed<T>::value;
template <class T>
struct is_unsigned : integral_constant<bool, is_integral_v<T> && !(T(-1) < T(0))> {};
template <class T> constexpr __constant bool is_unsigned_v = is_unsigned<T>::value;
template <class T>
struct is_vector : cl_detail::is_vector<remove_cv_t<remove_address_space_t<T>>> {};
template <class T> constexpr __constant bool is_vector_v = is_vector<T>::value;

// ---- numeric_limits --------------------------------------------------------
template <class T> struct numeric_limits {
  static constexpr __constant bool is_specialized = false;
};

namespace cl_detail {
template <class T, T Lowest, T Max>
struct integer_limits {
  static constexpr __constant bool is_specialized = true;
  static constexpr __constant bool is_integer = true;
  static constexpr __constant bool is_signed = Lowest < T(0);
  static constexpr T lowest() { return Lowest; }
  static constexpr T min() { return Lowest; }
  static constexpr T max() { return Max; }
};
template <class T>
struct float_limits {
  static constexpr __constant bool is_specialized = true;
  static constexpr __constant bool is_integer = false;
  static constexpr __constant bool is_signed = true;
  static constexpr __constant bool has_infinity = true;
  static constexpr __constant bool has_quiet_NaN = true;
};
}  // namespace cl_detail

template <> struct numeric_limits<bool> : cl_detail::integer_limits<bool, false, true> {};
template <> struct numeric_limits<char> : cl_detail::integer_limits<char, -128, 127> {};
template <> struct numeric_limits<uchar> : cl_detail::integer_limits<uchar, 0, 255> {};
template <> struct numeric_limits<short> : cl_detail::integer_limits<short, -32768, 32767> {};
template <> struct numeric_limits<ushort> : cl_detail::integer_limits<ushort, 0, 65535> {};
template <> struct numeric_limits<int>
    : cl_detail::integer_limits<int, -2147483647 - 1, 2147483647> {};
template <> struct numeric_limits<uint> : cl_detail::integer_limits<uint, 0u, 4294967295u> {};
template <> struct numeric_limits<long>
    : cl_detail::integer_limits<long, -9223372036854775807L - 1, 9223372036854775807L> {};
template <> struct numeric_limits<ulong>
    : cl_detail::integer_limits<ulong, 0ul, 18446744073709551615ul> {};

template <> struct numeric_limits<float> : cl_detail::float_limits<float> {
  static constexpr __constant int digits = 24;
  static constexpr float lowest() { return -3.40282347e+38f; }
  static constexpr float min() { return 1.17549435e-38f; }
  static constexpr float max() { return 3.40282347e+38f; }
  static constexpr float epsilon() { return 1.1920929e-07f; }
  static constexpr float denorm_min() { return 1.40129846e-45f; }
  static constexpr float infinity() { return __builtin_inff(); }
  static constexpr float quiet_NaN() { return __builtin_nanf(""); }
};
template <> struct numeric_limits<half> : cl_detail::float_limits<half> {
  static constexpr __constant int digits = 11;
  static constexpr half lowest() { return half(-65504.0f); }
  static constexpr half min() { return half(6.103515625e-05f); }
  static constexpr half max() { return half(65504.0f); }
  static constexpr half epsilon() { return half(0.0009765625f); }
  static constexpr half denorm_min() { return half(5.9604644775390625e-08f); }
  static constexpr half infinity() { return half(__builtin_inff()); }
  static constexpr half quiet_NaN() { return half(__builtin_nanf("")); }
};
template <> struct numeric_limits<bfloat> : cl_detail::float_limits<bfloat> {
  static constexpr __constant int digits = 8;
  static constexpr bfloat lowest() { return bfloat(-3.38953139e+38f); }
  static constexpr bfloat min() { return bfloat(1.17549435e-38f); }
  static constexpr bfloat max() { return bfloat(3.38953139e+38f); }
  static constexpr bfloat epsilon() { return bfloat(0.0078125f); }
  static constexpr bfloat denorm_min() { return bfloat(9.18354962e-41f); }
  static constexpr bfloat infinity() { return bfloat(__builtin_inff()); }
  static constexpr bfloat quiet_NaN() { return bfloat(__builtin_nanf("")); }
};

// ---- reinterpretation ------------------------------------------------------
template <class To, class From> To as_type(From from);

// ---- math ------------------------------------------------------------------
// One overload per floating type (scalars and vectors), all by value.
#define MSL_CL_FLOAT_TYPES(X) \
  X(float) X(float2) X(float3) X(float4) X(half) X(half2) X(half3) X(half4) X(bfloat)

#define MSL_CL_UNARY_DECL(T) T MSL_CL_NAME(T x);
#define MSL_CL_BINARY_DECL(T) T MSL_CL_NAME(T x, T y);
#define MSL_CL_TERNARY_DECL(T) T MSL_CL_NAME(T x, T y, T z);

#define MSL_CL_NAME exp
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME exp2
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME exp10
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME log
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME log2
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME log10
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME sqrt
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME rsqrt
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME sin
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME cos
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME tan
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME sinpi
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME cospi
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME tanpi
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME asin
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME acos
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME atan
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME sinh
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME cosh
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME tanh
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME asinh
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME acosh
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME atanh
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME floor
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME ceil
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME trunc
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME round
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME rint
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME fabs
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME fract
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME saturate
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME sign
MSL_CL_FLOAT_TYPES(MSL_CL_UNARY_DECL)
#undef MSL_CL_NAME

#define MSL_CL_NAME pow
MSL_CL_FLOAT_TYPES(MSL_CL_BINARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME powr
MSL_CL_FLOAT_TYPES(MSL_CL_BINARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME atan2
MSL_CL_FLOAT_TYPES(MSL_CL_BINARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME fmod
MSL_CL_FLOAT_TYPES(MSL_CL_BINARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME fmin
MSL_CL_FLOAT_TYPES(MSL_CL_BINARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME fmax
MSL_CL_FLOAT_TYPES(MSL_CL_BINARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME copysign
MSL_CL_FLOAT_TYPES(MSL_CL_BINARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME fdim
MSL_CL_FLOAT_TYPES(MSL_CL_BINARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME step
MSL_CL_FLOAT_TYPES(MSL_CL_BINARY_DECL)
#undef MSL_CL_NAME

#define MSL_CL_NAME fma
MSL_CL_FLOAT_TYPES(MSL_CL_TERNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME mix
MSL_CL_FLOAT_TYPES(MSL_CL_TERNARY_DECL)
#undef MSL_CL_NAME
#define MSL_CL_NAME smoothstep
MSL_CL_FLOAT_TYPES(MSL_CL_TERNARY_DECL)
#undef MSL_CL_NAME

// Functions with an out-parameter: MSL declares it in the thread address space.
#define MSL_CL_OUT_DECL(T)                   \
  T frexp(T x, __private int& exponent);     \
  T ldexp(T x, int exponent);                \
  T modf(T x, __private T& integral_part);   \
  T sincos(T x, __private T& cosine);
MSL_CL_OUT_DECL(float)
MSL_CL_OUT_DECL(half)
MSL_CL_OUT_DECL(bfloat)
#undef MSL_CL_OUT_DECL

#define MSL_CL_PREDICATE_DECL(T, B) \
  B isnan(T x);                     \
  B isinf(T x);                     \
  B isfinite(T x);                  \
  B isnormal(T x);                  \
  B signbit(T x);
MSL_CL_PREDICATE_DECL(float, bool)
MSL_CL_PREDICATE_DECL(half, bool)
MSL_CL_PREDICATE_DECL(bfloat, bool)
MSL_CL_PREDICATE_DECL(float2, bool2)
MSL_CL_PREDICATE_DECL(float3, bool3)
MSL_CL_PREDICATE_DECL(float4, bool4)
MSL_CL_PREDICATE_DECL(half2, bool2)
MSL_CL_PREDICATE_DECL(half3, bool3)
MSL_CL_PREDICATE_DECL(half4, bool4)
#undef MSL_CL_PREDICATE_DECL

#undef MSL_CL_UNARY_DECL
#undef MSL_CL_BINARY_DECL
#undef MSL_CL_TERNARY_DECL
#undef MSL_CL_FLOAT_TYPES

#define MSL_CL_INTEGER_DECL(T) \
  T abs(T x);                  \
  T popcount(T x);             \
  T clz(T x);                  \
  T ctz(T x);                  \
  T mulhi(T x, T y);
MSL_CL_INTEGER_DECL(char)
MSL_CL_INTEGER_DECL(uchar)
MSL_CL_INTEGER_DECL(short)
MSL_CL_INTEGER_DECL(ushort)
MSL_CL_INTEGER_DECL(int)
MSL_CL_INTEGER_DECL(uint)
MSL_CL_INTEGER_DECL(long)
MSL_CL_INTEGER_DECL(ulong)
#undef MSL_CL_INTEGER_DECL
float abs(float x);
half abs(half x);
bfloat abs(bfloat x);

// min/max/clamp/select for any scalar or vector type (as the emulator: a
// template plus float overloads, so min(float, int) picks float).
template <class T> T min(T a, T b);
template <class T> T max(T a, T b);
float min(float a, float b);
float max(float a, float b);
template <class T> T clamp(T x, T lo, T hi);
template <class T> T select(T a, T b, bool c);
template <class V> bool all(V v);
template <class V> bool any(V v);
template <class V> auto dot(V a, V b) -> decltype(a.x * b.x);
template <class V> auto length(V v) -> decltype(v.x);
template <class V> V normalize(V v);

namespace precise {
using namespace ::metal;
}
namespace fast {
using namespace ::metal;
}

// ---- synchronization and SIMD-group functions ------------------------------
}  // namespace metal: the flags' header (shared with the C++ targets) opens it itself
#include "../../csrc/msl/include/mps_ops_msl/mem_flags.h"
namespace metal {
void threadgroup_barrier(mem_flags flags);
void simdgroup_barrier(mem_flags flags);

template <class T> T simd_sum(T x);
template <class T> T simd_product(T x);
template <class T> T simd_min(T x);
template <class T> T simd_max(T x);
template <class T> T simd_and(T x);
template <class T> T simd_or(T x);
template <class T> T simd_xor(T x);
template <class T> T simd_prefix_inclusive_sum(T x);
template <class T> T simd_prefix_exclusive_sum(T x);
template <class T> T simd_prefix_inclusive_product(T x);
template <class T> T simd_prefix_exclusive_product(T x);
template <class T> T simd_shuffle(T x, ushort lane);
template <class T> T simd_broadcast(T x, ushort lane);
template <class T> T simd_shuffle_up(T x, ushort delta);
template <class T> T simd_shuffle_down(T x, ushort delta);
template <class T> T simd_shuffle_xor(T x, ushort mask);
template <class T> T simd_shuffle_rotate_up(T x, ushort delta);
template <class T> T simd_shuffle_rotate_down(T x, ushort delta);
template <class T> T simd_shuffle_and_fill_up(T x, T fill, ushort delta);
template <class T> T simd_shuffle_and_fill_up(T x, T fill, ushort delta, ushort modulo);
template <class T> T simd_shuffle_and_fill_down(T x, T fill, ushort delta);
template <class T> T simd_shuffle_and_fill_down(T x, T fill, ushort delta, ushort modulo);
template <class T> T simd_broadcast_first(T x);
bool simd_is_first();
bool simd_all(bool x);
bool simd_any(bool x);
struct simd_vote {
  typedef ulong vote_t;
  vote_t bits;
  bool all() const;
  bool any() const;
  explicit operator vote_t() const;
};
simd_vote simd_ballot(bool x);
simd_vote simd_active_threads_mask();

// ---- atomics: objects live in device or threadgroup memory ------------------
enum memory_order { memory_order_relaxed, memory_order_seq_cst };

template <class T> struct atomic {
  T msl_cl_value;
};
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<float> atomic_float;
typedef atomic<long> atomic_long;
typedef atomic<ulong> atomic_ulong;

#define MSL_CL_ATOMIC_DECL(AS)                                                                 \
  template <class T> T atomic_load_explicit(const volatile AS atomic<T>* object, memory_order); \
  template <class T, class U>                                                                   \
  void atomic_store_explicit(volatile AS atomic<T>* object, U desired, memory_order);           \
  template <class T, class U>                                                                   \
  T atomic_exchange_explicit(volatile AS atomic<T>* object, U desired, memory_order);           \
  template <class T, class U>                                                                   \
  bool atomic_compare_exchange_weak_explicit(volatile AS atomic<T>* object,                     \
                                             __private T* expected, U desired, memory_order,    \
                                             memory_order);                                     \
  template <class T, class U>                                                                   \
  T atomic_fetch_add_explicit(volatile AS atomic<T>* object, U operand, memory_order);          \
  template <class T, class U>                                                                   \
  T atomic_fetch_sub_explicit(volatile AS atomic<T>* object, U operand, memory_order);          \
  template <class T, class U>                                                                   \
  T atomic_fetch_and_explicit(volatile AS atomic<T>* object, U operand, memory_order);          \
  template <class T, class U>                                                                   \
  T atomic_fetch_or_explicit(volatile AS atomic<T>* object, U operand, memory_order);           \
  template <class T, class U>                                                                   \
  T atomic_fetch_xor_explicit(volatile AS atomic<T>* object, U operand, memory_order);          \
  template <class T, class U>                                                                   \
  T atomic_fetch_min_explicit(volatile AS atomic<T>* object, U operand, memory_order);          \
  template <class T, class U>                                                                   \
  T atomic_fetch_max_explicit(volatile AS atomic<T>* object, U operand, memory_order);
MSL_CL_ATOMIC_DECL(__global)
MSL_CL_ATOMIC_DECL(__local)
#undef MSL_CL_ATOMIC_DECL

// ---- what the tool's rewrites call -----------------------------------------
namespace cl_detail {
// `float4(a, b)` -> `::metal::cl_detail::make_vector<float4>(a, b)`.
template <class V, class... Args> V make_vector(Args... args);
// `threadgroup T name[N];` in a function body ->
// `auto& name = ::metal::cl_detail::threadgroup_storage<T[N]>();`
// (OpenCL allows __local variables only in kernel functions).
template <class T> __local T& threadgroup_storage();
}  // namespace cl_detail

}  // namespace metal

using metal::as_type;
