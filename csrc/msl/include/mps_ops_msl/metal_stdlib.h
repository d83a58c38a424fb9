// <metal_stdlib> stand-in: what MSL kernels see when a C++ target (the CPU
// emulator; the CUDA target) compiles them. Every generated kernel translation
// unit starts with this file; the kernel source itself had its
// `#include <metal_stdlib>` expanded to nothing by the prepass. The types,
// traits and math here are the same for every target; what differs comes
// from each target's include directory: <mps_ops_target/math_primitives.h>
// (the float functions: the C library on the CPU, libdevice on an NVIDIA GPU)
// and <mps_ops_target/metal_target.h> (SIMD-group functions, atomics, the
// emulator's bounds-checked pointers). No C++ standard headers here: `::exp(double)` and friends would
// collide with `metal::exp` after `using namespace metal;`.
#pragma once

#include <stdint.h>
#include <string.h>

#include "bfloat.h"
#include "vector.h"

// Address spaces carry no meaning on the CPU. `constant` must still be const:
// with an empty macro `constant void*` and `device void*` overloads collide.
#define kernel
#define device
#define constant const
#define thread
#define threadgroup

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef _Float16 half;
using bfloat = ::mps_ops_emu::bfloat;

#define MPS_OPS_EMU_VECTOR_TYPES(T) \
  typedef ::mps_ops_emu::vec<T, 2> T##2; \
  typedef ::mps_ops_emu::vec<T, 3> T##3; \
  typedef ::mps_ops_emu::vec<T, 4> T##4;
MPS_OPS_EMU_VECTOR_TYPES(bool)
MPS_OPS_EMU_VECTOR_TYPES(char)
MPS_OPS_EMU_VECTOR_TYPES(uchar)
MPS_OPS_EMU_VECTOR_TYPES(short)
MPS_OPS_EMU_VECTOR_TYPES(ushort)
MPS_OPS_EMU_VECTOR_TYPES(int)
MPS_OPS_EMU_VECTOR_TYPES(uint)
MPS_OPS_EMU_VECTOR_TYPES(long)
MPS_OPS_EMU_VECTOR_TYPES(ulong)
MPS_OPS_EMU_VECTOR_TYPES(half)
MPS_OPS_EMU_VECTOR_TYPES(bfloat)
MPS_OPS_EMU_VECTOR_TYPES(float)
#undef MPS_OPS_EMU_VECTOR_TYPES
// MSL's metal::vec<T, N>, for templates over the element type.
namespace metal {
template <class T, int N>
using vec = ::mps_ops_emu::vec<T, N>;
}

#define MPS_OPS_EMU_PACKED_TYPES(T) \
  typedef ::mps_ops_emu::packed_vec<T, 2> packed_##T##2; \
  typedef ::mps_ops_emu::packed_vec<T, 3> packed_##T##3; \
  typedef ::mps_ops_emu::packed_vec<T, 4> packed_##T##4;
MPS_OPS_EMU_PACKED_TYPES(char)
MPS_OPS_EMU_PACKED_TYPES(uchar)
MPS_OPS_EMU_PACKED_TYPES(short)
MPS_OPS_EMU_PACKED_TYPES(ushort)
MPS_OPS_EMU_PACKED_TYPES(int)
MPS_OPS_EMU_PACKED_TYPES(uint)
MPS_OPS_EMU_PACKED_TYPES(half)
MPS_OPS_EMU_PACKED_TYPES(bfloat)
MPS_OPS_EMU_PACKED_TYPES(float)
#undef MPS_OPS_EMU_PACKED_TYPES

#include "metal_traits.h"
#include "metal_math.h"
#include "metal_vector_math.h"

#include <mps_ops_target/metal_target.h>
