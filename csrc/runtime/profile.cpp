#include "profile.h"

#include <mutex>

namespace mps_ops {
namespace profile {

std::atomic<bool> enabled{false};

namespace {
std::mutex records_mutex;
std::vector<DispatchRecord> records;
}  // namespace

void start() {
  std::lock_guard<std::mutex> lock(records_mutex);
  records.clear();
  enabled.store(true);
}

std::vector<DispatchRecord> stop() {
  std::lock_guard<std::mutex> lock(records_mutex);
  enabled.store(false);
  return std::move(records);
}

void record(DispatchRecord record) {
  std::lock_guard<std::mutex> lock(records_mutex);
  if (enabled.load(std::memory_order_relaxed)) {
    records.push_back(std::move(record));
  }
}

}  // namespace profile
}  // namespace mps_ops
