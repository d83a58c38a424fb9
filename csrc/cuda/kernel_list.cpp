#include "kernel_list.h"

#include <c10/util/Exception.h>

#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace mps_ops::cuda {

std::string ptx_directory() {
  const char* explicit_dir = std::getenv("MPS_OPS_PTX_DIR");
  if (explicit_dir != nullptr && explicit_dir[0] != '\0') return explicit_dir;
  // The extension built in place sits at <tree>/mps_ops/_C*.so, and the PTX
  // at <tree>/build/cuda: found from this library's own path, so neither the
  // working directory nor a path baked in at build time matters.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ptx_directory), &info) != 0 && info.dli_fname != nullptr) {
    std::string library = info.dli_fname;
    const size_t slash = library.rfind('/');
    const std::string package = slash == std::string::npos ? "." : library.substr(0, slash);
    return package + "/../build/cuda";
  }
  return "build/cuda";
}

std::vector<KernelListEntry> read_kernel_list(const std::string& dir) {
  return read_kernel_list_file(dir + "/kernels.txt",
                               ": build the PTX with `python tools/cuda_build.py` (clang-19) and bring "
                               "build/cuda with the tree, or set MPS_OPS_PTX_DIR");
}

std::vector<KernelListEntry> read_kernel_list_file(const std::string& path, const char* if_missing) {
  std::ifstream in(path);
  TORCH_CHECK(in.good(), "mps_ops cuda: cannot open ", path, if_missing);
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
