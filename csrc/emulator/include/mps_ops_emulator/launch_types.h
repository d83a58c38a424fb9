// What launchers and fibers share about one thread.
#pragma once

#include "kernel_abi.h"

namespace mps_ops_emu {

// Where one thread stands, as the built-in attributes describe it.
using ::mps_ops_msl::thread_place;

}  // namespace mps_ops_emu
