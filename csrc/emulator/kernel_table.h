// Kernels known to the emulator: the ones compiled into the extension
// (registered by static registrars before main) and those of libraries that
// compile_shader built and loaded at run time.
#pragma once

#include <mps_ops_emulator/kernel_abi.h>

#include <map>
#include <string>
#include <vector>

namespace mps_ops::emulator {

using KernelMap = std::map<std::string, mps_ops_emu::kernel_entry>;

// The extension's own kernels, read-only once Python imports the module.
const KernelMap& builtin_kernels();

// dlopens a library built by compile_shader; raises with dlerror's message.
// Libraries stay loaded for the life of the process.
const KernelMap& load_library_file(const std::string& path);

}  // namespace mps_ops::emulator
