// mps_ops.profile(): a record of every dispatch while enabled. Off by default;
// the hot path pays one relaxed atomic load.
#pragma once

#include "backend.h"

#include <atomic>
#include <string>
#include <vector>

namespace mps_ops {

struct DispatchRecord {
  std::string kernel;
  Dim3 threads;
  Dim3 group;
  std::vector<size_t> buffers;  // bytes bound, one entry per argument slot in index order
  int operands;                 // leading slots that are operands; -1 if not said
  std::vector<bool> inline_slots;     // per slot: bound as inline bytes (setBytes), not a buffer
  std::vector<int> element_sizes;     // per buffer slot: the bound tensor's itemsize (0: unknown)
};

// Profiles nest: each start() returns a mark, and stop(mark) returns the
// dispatches recorded since it; recording ends with the outermost stop.
namespace profile {
extern std::atomic<bool> enabled;
size_t start();
std::vector<DispatchRecord> stop(size_t mark);
void record(DispatchRecord record);
}  // namespace profile

}  // namespace mps_ops
