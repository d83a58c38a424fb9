// MSL's barrier memory flags (metal::mem_flags): their one statement for
// every C++ stand-in of <metal_stdlib>, the emulator's and the CUDA target's
// (through simd_ops.h) and the address-space check's OpenCL one
// (tools/addrspace_stub/metal_stdlib_cl.h).
#pragma once

namespace metal {

enum class mem_flags : unsigned {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
constexpr mem_flags operator|(mem_flags a, mem_flags b) {
  return mem_flags(unsigned(a) | unsigned(b));
}

}  // namespace metal
