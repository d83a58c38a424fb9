// Bounds and geometry that kernels and host code share. Plain C++ that both MSL and the
// host compiler accept (an enum, not a `constant` variable), included by the
// host stubs and csrc/runtime as params.h is.
#pragma once

namespace mps_ops {

// The most dims a kernel's size/stride tables hold: the strided element-wise
// kernels' (csrc/runtime/elementwise.cpp runs one pass per index of the
// outermost dim beyond it), a reduction's outer and inner dim lists
// (reduction_layout), take/put_'s flattened self (put_params).
enum { max_ndim = 16 };

// Elements each thread of an element-wise kernel takes (elementwise.h says
// how), by the size in bytes of the kernel's input type: narrow types take
// more, so a thread keeps about as many bytes in flight as a 4-byte one.
inline constexpr unsigned elements_per_thread(unsigned long element_bytes) {
  return element_bytes >= 4 ? 4u : 8u;
}

// A dense element-wise grid is dealt out in tiles of this many threads (the
// SIMD width of Apple GPUs and NVIDIA's warps alike): the threads of a tile
// take its elements_per_thread * tile neighbouring elements, lane l taking
// l, l + tile, ... So the grid is a whole number of tiles.
enum { elementwise_tile = 32 };

// The rows mapping for kernels that hold a row in registers with few
// elements per thread (SliceMapping::register_rows: weight_norm): for
// elements of 4 bytes or more, at most this many per thread wherever the row
// fits in a group at that rate (rows of up to 8 x 256 elements); longer rows
// get a whole group, and such a kernel reads them again instead. Rows of
// 2-byte elements keep the rows mapping's 32 per thread (and are read
// twice): spreading them over 4x the threads for registers cost more in
// merge steps and narrow loads than the second read (H100: half softmax over
// rows of 1024, when softmax took this mapping, 0.54x torch read twice,
// 0.42x held 8 per thread, 0.35x held 16 per thread at 54 registers).
enum { register_row_elements = 8 };

// The rows mapping's elements per thread (SliceMapping::rows: share =
// the row's length / this, a power of two from 8 to the group's size):
// kernels that hold a row in registers (softmax) size their arrays by it.
enum { elements_per_row_thread = 32 };

}  // namespace mps_ops
