#include "options.h"

#include <cstdlib>
#include <cstring>

namespace mps_ops::emulator {

Options& options() {
  static Options* instance = [] {
    auto* o = new Options();
    const char* checked = std::getenv("MPS_OPS_CHECKED");
    o->checked.store(checked != nullptr && std::strcmp(checked, "1") == 0);
    return o;
  }();
  return *instance;
}

}  // namespace mps_ops::emulator
