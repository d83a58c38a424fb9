// _int_mm: out = a @ b, a int8 or uint8, b int8, out int32 (a fill for
// torch 2.9 to 2.14, where torchao's int8 dynamic quantization and
// torch._int_mm raised on a Mac; host stub in csrc/operations/int_mm.mm).
// Sums wrap modulo 2**32, as the CPU's int32 sums do: every product fits in
// 16 bits, and the sum is kept as a uint (defined wrapping on every target)
// and read back as an int by its bits.
//
// A threadgroup of int_mm_side**2 (256) threads computes an int_mm_tile**2
// (64 x 64) tile of out, each thread 4 x 4 outputs int_mm_side apart (so a
// SIMD group's reads of the tiles below hit few addresses). The inner dim
// goes int_mm_depth (32) at a time: the group copies a's 64 x 32 and b's
// 32 x 64 bytes into threadgroup memory (4 KiB), each element read from
// device memory once per group instead of once per output, zeros past the
// matrices' edges; then every thread takes 16 products per step of the
// inner dim from them.
#include <metal_stdlib>
#include <mps_ops/instantiate.h>

#include "int_mm_params.h"
using namespace metal;

namespace {

constant constexpr uint outputs_a_side = mps_ops::int_mm_tile / mps_ops::int_mm_side;
// Each thread's share of a tile copy: a 64 x 32 tile over 256 threads.
constant constexpr uint copied_per_thread = mps_ops::int_mm_tile * mps_ops::int_mm_depth /
                                           (mps_ops::int_mm_side * mps_ops::int_mm_side);

}  // namespace

template <typename A>
kernel void int_mm(device int* out [[buffer(0)]],
                   constant A* a [[buffer(1)]],
                   constant char* b [[buffer(2)]],
                   constant mps_ops::int_mm_params& params [[buffer(3)]],
                   uint2 group [[threadgroup_position_in_grid]],
                   uint2 local [[thread_position_in_threadgroup]]) {
  threadgroup A a_tile[mps_ops::int_mm_tile][mps_ops::int_mm_depth];
  threadgroup char b_tile[mps_ops::int_mm_depth][mps_ops::int_mm_tile];
  const mps_ops::int_mm_params p = params;
  const uint first_row = group.y * mps_ops::int_mm_tile, first_column = group.x * mps_ops::int_mm_tile;
  const uint in_group = local.y * mps_ops::int_mm_side + local.x;
  // This thread's run of each tile copy: a's row and first k, b's k and
  // first column (consecutive threads take consecutive runs of a row).
  const uint a_row = in_group / (mps_ops::int_mm_depth / copied_per_thread);
  const uint a_k = (in_group % (mps_ops::int_mm_depth / copied_per_thread)) * copied_per_thread;
  const uint b_k = in_group / (mps_ops::int_mm_tile / copied_per_thread);
  const uint b_column = (in_group % (mps_ops::int_mm_tile / copied_per_thread)) * copied_per_thread;
  uint sums[outputs_a_side][outputs_a_side] = {};
  for (uint k0 = 0; k0 < p.inner; k0 += mps_ops::int_mm_depth) {
    const uint row = first_row + a_row;
    for (uint j = 0; j < copied_per_thread; ++j) {
      const uint k = k0 + a_k + j;
      a_tile[a_row][a_k + j] = row < p.rows && k < p.inner ? a[ulong(row) * p.inner + k] : A(0);
    }
    const uint k = k0 + b_k;
    for (uint j = 0; j < copied_per_thread; ++j) {
      const uint column = first_column + b_column + j;
      b_tile[b_k][b_column + j] = k < p.inner && column < p.columns ? b[ulong(k) * p.columns + column] : char(0);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint step = 0; step < mps_ops::int_mm_depth; ++step) {
      int a_values[outputs_a_side], b_values[outputs_a_side];
      for (uint i = 0; i < outputs_a_side; ++i) {
        a_values[i] = int(a_tile[local.y + i * mps_ops::int_mm_side][step]);
        b_values[i] = int(b_tile[step][local.x + i * mps_ops::int_mm_side]);
      }
      for (uint i = 0; i < outputs_a_side; ++i) {
        for (uint j = 0; j < outputs_a_side; ++j) {
          sums[i][j] += uint(a_values[i] * b_values[j]);
        }
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);  // the tiles are overwritten next
  }
  for (uint i = 0; i < outputs_a_side; ++i) {
    const uint row = first_row + local.y + i * mps_ops::int_mm_side;
    for (uint j = 0; j < outputs_a_side; ++j) {
      const uint column = first_column + local.x + j * mps_ops::int_mm_side;
      if (row < p.rows && column < p.columns) {
        out[ulong(row) * p.columns + column] = as_type<int>(sums[i][j]);
      }
    }
  }
}

MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(int_mm, dense, int, char), int_mm, char)
MPS_OPS_INSTANTIATE(MPS_OPS_HOST_NAME(int_mm, dense, int, uchar), int_mm, uchar)
