// Named sets of dtypes, stated once for the kernels and the registry.
//
// MPS_OPS_FOR_<SET>(M, args...) expands to M(args..., T) once per Metal type
// T of the set, so one line instantiates a kernel for every dtype of a set:
//   MPS_OPS_FOR_FLOATING(REGISTER_UNARY_OP_SAME_TYPE, logit)
// csrc/native_functions.yaml names the same sets in lower case
// (`dtypes: floating`, or `[integral, float32]` mixing sets and dtypes):
// tools/codegen.py reads this file for them, so keep each definition to the
// forms below (M(__VA_ARGS__, <type>) and MPS_OPS_FOR_<SET>(M, __VA_ARGS__)).
// test/test_registry_kernels.py checks that every registry dtype has its kernels.
#pragma once

// Single sets.
#define MPS_OPS_FOR_BOOL(M, ...) M(__VA_ARGS__, bool)
// torch's integral types (uint8, int8, int16, int32, int64).
#define MPS_OPS_FOR_INTEGRAL(M, ...) \
  M(__VA_ARGS__, uchar) M(__VA_ARGS__, char) M(__VA_ARGS__, short) M(__VA_ARGS__, int) M(__VA_ARGS__, long)
// uint16, uint32, uint64: torch's CPU kernels cover them for few ops.
#define MPS_OPS_FOR_WIDE_UNSIGNED(M, ...) M(__VA_ARGS__, ushort) M(__VA_ARGS__, uint) M(__VA_ARGS__, ulong)
// float16, bfloat16, float32 (Metal has no float64).
#define MPS_OPS_FOR_FLOATING(M, ...) M(__VA_ARGS__, half) M(__VA_ARGS__, bfloat) M(__VA_ARGS__, float)

// Unions, in the order the registry lists dtypes.
#define MPS_OPS_FOR_NONFLOATING(M, ...) \
  MPS_OPS_FOR_BOOL(M, __VA_ARGS__) MPS_OPS_FOR_INTEGRAL(M, __VA_ARGS__) MPS_OPS_FOR_WIDE_UNSIGNED(M, __VA_ARGS__)
// What torch's CPU kernels usually cover: bool, integral, floating.
#define MPS_OPS_FOR_ALL_BUT_WIDE_UNSIGNED(M, ...) \
  MPS_OPS_FOR_BOOL(M, __VA_ARGS__) MPS_OPS_FOR_INTEGRAL(M, __VA_ARGS__) MPS_OPS_FOR_FLOATING(M, __VA_ARGS__)
#define MPS_OPS_FOR_ALL(M, ...) MPS_OPS_FOR_NONFLOATING(M, __VA_ARGS__) MPS_OPS_FOR_FLOATING(M, __VA_ARGS__)
