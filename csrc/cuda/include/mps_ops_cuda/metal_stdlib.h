// <metal_stdlib> stand-in for the CUDA target: what MSL kernels see when the
// prepass output (target "cuda") is compiled as CUDA device code by clang.
// The MSL-facing headers that need nothing of a CPU (vectors, bfloat, traits,
// the vector math) are the emulator's, included from its directory (the
// prepass's MSL_SHARED_INCLUDE); math, SIMD-group functions and atomics are
// this target's own. Pointers stay plain pointers: no bounded_ptr here.
//
// Every function declared between the pragmas is __host__ __device__
// (clang's force_cuda_host_device), so MSL code needs no CUDA attributes.
// <string.h> is included inside them so that memcpy (bfloat, as_type) is a
// device function too: clang lowers it as a builtin.
#pragma once

#include <stdint.h>

#pragma clang force_cuda_host_device begin

#include <string.h>

// Address spaces carry no meaning in the generic address space. `constant`
// must still be const: with an empty macro `constant void*` and `device
// void*` overloads collide. (`device` being a macro, CUDA's own attribute is
// spelled __attribute__((__device__)) everywhere.)
#define kernel
#define device
#define constant const
#define thread
#define threadgroup

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
// Native f16 on sm_90: every operation rounds to half, as in the emulator.
typedef _Float16 half;

#include <mps_ops_emulator/bfloat.h>
#include <mps_ops_emulator/vector.h>

using bfloat = ::mps_ops_emu::bfloat;

// The same type names as the emulator's metal_stdlib.h.
#define MPS_OPS_CUDA_VECTOR_TYPES(T) \
  typedef ::mps_ops_emu::vec<T, 2> T##2; \
  typedef ::mps_ops_emu::vec<T, 3> T##3; \
  typedef ::mps_ops_emu::vec<T, 4> T##4;
MPS_OPS_CUDA_VECTOR_TYPES(bool)
MPS_OPS_CUDA_VECTOR_TYPES(char)
MPS_OPS_CUDA_VECTOR_TYPES(uchar)
MPS_OPS_CUDA_VECTOR_TYPES(short)
MPS_OPS_CUDA_VECTOR_TYPES(ushort)
MPS_OPS_CUDA_VECTOR_TYPES(int)
MPS_OPS_CUDA_VECTOR_TYPES(uint)
MPS_OPS_CUDA_VECTOR_TYPES(long)
MPS_OPS_CUDA_VECTOR_TYPES(ulong)
MPS_OPS_CUDA_VECTOR_TYPES(half)
MPS_OPS_CUDA_VECTOR_TYPES(bfloat)
MPS_OPS_CUDA_VECTOR_TYPES(float)
#undef MPS_OPS_CUDA_VECTOR_TYPES

#define MPS_OPS_CUDA_PACKED_TYPES(T) \
  typedef ::mps_ops_emu::packed_vec<T, 2> packed_##T##2; \
  typedef ::mps_ops_emu::packed_vec<T, 3> packed_##T##3; \
  typedef ::mps_ops_emu::packed_vec<T, 4> packed_##T##4;
MPS_OPS_CUDA_PACKED_TYPES(char)
MPS_OPS_CUDA_PACKED_TYPES(uchar)
MPS_OPS_CUDA_PACKED_TYPES(short)
MPS_OPS_CUDA_PACKED_TYPES(ushort)
MPS_OPS_CUDA_PACKED_TYPES(int)
MPS_OPS_CUDA_PACKED_TYPES(uint)
MPS_OPS_CUDA_PACKED_TYPES(half)
MPS_OPS_CUDA_PACKED_TYPES(bfloat)
MPS_OPS_CUDA_PACKED_TYPES(float)
#undef MPS_OPS_CUDA_PACKED_TYPES

#include <mps_ops_emulator/metal_traits.h>
#include "metal_math.h"
#include <mps_ops_emulator/metal_vector_math.h>
#include "metal_simd.h"
#include "metal_atomic.h"

#pragma clang force_cuda_host_device end
