// The emulator's part of the <metal_stdlib> stand-in (csrc/msl): bounds-checked
// pointers into device, constant and threadgroup memory, SIMD-group functions
// over fibers, and atomics, all for threadgroups run one at a time on a CPU
// thread.
#pragma once

#include <mps_ops_emulator/bounded_ptr.h>
#include <mps_ops_emulator/metal_simd.h>
#include <mps_ops_emulator/metal_atomic.h>
