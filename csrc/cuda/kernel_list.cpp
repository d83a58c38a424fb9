#include "kernel_list.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace mps_ops::cuda {

std::string ptx_directory() {
  const char* explicit_dir = std::getenv("MPS_OPS_PTX_DIR");
  if (explicit_dir != nullptr && explicit_dir[0] != '\0') return explicit_dir;
#if defined(MPS_OPS_DEFAULT_PTX_DIR)
  return MPS_OPS_DEFAULT_PTX_DIR;
#else
  return "build/cuda";
#endif
}

std::vector<KernelListEntry> read_kernel_list(const std::string& dir) {
  const std::string path = dir + "/kernels.txt";
  std::ifstream in(path);
  TORCH_CHECK(in.good(), "mps_ops cuda: cannot open ", path,
              ": build the PTX with `python tools/cuda_build.py` (clang-19) and bring build/cuda "
              "with the tree, or set MPS_OPS_PTX_DIR");
  std::vector<KernelListEntry> entries;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    std::istringstream fields(line);
    KernelListEntry e;
    std::string buffers, threadgroups;
    fields >> e.host_name >> e.ptx_file >> buffers >> threadgroups;
    TORCH_CHECK(!fields.fail() && !threadgroups.empty(), "mps_ops cuda: ", path, ":", number,
                ": expected `host_name file.ptx buffers threadgroups`, got '", line,
                "' (a kernels.txt from an older tools/cuda_build.py? rebuild the PTX)");
    e.buffer_slots = static_cast<uint32_t>(std::stoul(buffers, nullptr, 16));
    e.threadgroup_slots = static_cast<uint32_t>(std::stoul(threadgroups, nullptr, 16));
    entries.push_back(std::move(e));
  }
  TORCH_CHECK(!entries.empty(), "mps_ops cuda: ", path, " lists no kernels");
  return entries;
}

}  // namespace mps_ops::cuda
