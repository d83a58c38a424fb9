// The emulator's side of the backend interface, and its kernel table.
#pragma once

#include "../runtime/backend.h"

#include <vector>

namespace mps_ops {

Backend& emulator_backend();
// Host names of every kernel compiled into this build, sorted.
std::vector<std::string> emulator_kernel_names();

}  // namespace mps_ops
