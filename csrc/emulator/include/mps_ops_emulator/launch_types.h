// What launchers and fibers share about one thread.
#pragma once

#include "kernel_abi.h"

namespace mps_ops_emu {

// Where one thread stands, as the built-in attributes describe it.
struct thread_place {
  grid3 in_grid;
  grid3 in_group;
  grid3 group_in_grid;
  grid3 grid_size;
  grid3 group_size;  // of this (possibly clipped) threadgroup
  grid3 groups;
  uint32_t index_in_group;  // thread_index_in_threadgroup
};


}  // namespace mps_ops_emu
