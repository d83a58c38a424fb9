// The built-in kernels of a CUDA build: the PTX files tools/cuda_build.py
// wrote (one per .metal file) and its kernels.txt, `host_name file.ptx
// buffers threadgroups` per line (the last two: declared slot masks in hex).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mps_ops::cuda {

struct KernelListEntry {
  std::string host_name;
  std::string ptx_file;  // file name inside the PTX directory
  uint32_t buffer_slots = 0;
  uint32_t threadgroup_slots = 0;
};

// Where the PTX lives: $MPS_OPS_PTX_DIR, else the build/cuda directory of the
// tree the extension was built in place in (the PTX is built where clang-19
// is, by tools/cuda_build.py, and travels with the tree).
std::string ptx_directory();

// kernels.txt of dir, parsed; raises c10::Error naming the file and line if
// it is missing or malformed.
std::vector<KernelListEntry> read_kernel_list(const std::string& dir);

// A kernel list file in that format (a prebuilt compile_shader source's,
// shaders/<key>.txt, whose PTX files are named relative to the PTX directory).
// if_missing: what the error says after the path when the file is missing.
std::vector<KernelListEntry> read_kernel_list_file(const std::string& path, const char* if_missing = "");

}  // namespace mps_ops::cuda
