#include "profile.h"

#include <algorithm>
#include <mutex>

namespace mps_ops {
namespace profile {

std::atomic<bool> enabled{false};

namespace {
std::mutex records_mutex;
std::vector<DispatchRecord> records;
int depth = 0;
}  // namespace

size_t start() {
  std::lock_guard<std::mutex> lock(records_mutex);
  if (depth++ == 0) {
    records.clear();
    enabled.store(true);
  }
  return records.size();
}

std::vector<DispatchRecord> stop(size_t mark) {
  std::lock_guard<std::mutex> lock(records_mutex);
  std::vector<DispatchRecord> since(records.begin() + std::min(mark, records.size()), records.end());
  if (depth > 0 && --depth == 0) {
    enabled.store(false);
    records.clear();
  }
  return since;
}

void record(DispatchRecord record) {
  std::lock_guard<std::mutex> lock(records_mutex);
  if (enabled.load(std::memory_order_relaxed)) {
    records.push_back(std::move(record));
  }
}

}  // namespace profile
}  // namespace mps_ops
