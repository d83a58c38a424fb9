"""Type-check the CUDA backend (csrc/cuda/*.cpp) where no GPU is, so that it
cannot rot between runs on a borrowed GPU machine.

    python tools/check_cuda_backend.py [--cxx CXX]

Compiles, -fsyntax-only, with the installed torch's headers (a CPU build is
enough) and MPS_OPS_WITH_CUDA as setup.py's CUDA build defines it:
  - every csrc/cuda/*.cpp, csrc/runtime/backend.cpp and csrc/python/module.cpp
    (the CUDA build's selection of the backend and of _C's introspection);
  - csrc/cuda/torch_cuda.cpp again with MPS_OPS_CUDA_TORCH_HEADERS (torch's
    c10/cuda headers, as on the GPU machine) where a CUDA toolkit's
    cuda_runtime_api.h is installed;
  - driver_api.h against the toolkit's cuda.h: every enumerator equal and
    every function pointer type of the same shape as cuda.h's declaration.
Exits non-zero on any failure; prints what it checked and what it skipped.
test/test_cuda_backend_build.py runs it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import cuda_build  # noqa: E402  (find_cuda_toolkit: one way to find the toolkit)

CUDA_SOURCES = sorted(
    os.path.join(ROOT, "csrc", "cuda", f)
    for f in os.listdir(os.path.join(ROOT, "csrc", "cuda")) if f.endswith(".cpp")
)
SELECTION_SOURCES = [os.path.join(ROOT, "csrc", "runtime", "backend.cpp"),
                     os.path.join(ROOT, "csrc", "python", "module.cpp")]

# The driver API functions driver_api.h declares, by the name cuda.h gives
# each. cuda.h maps some to versioned symbols through macros: driver_api.cpp
# resolves the unversioned names of the others, and for these the symbol
# driver_api.h names (VERSIONED_SYMBOLS: asserted equal to the macro's).
DRIVER_FUNCTIONS = ["cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuCtxGetCurrent",
                    "cuCtxSetCurrent", "cuModuleLoadDataEx", "cuModuleGetFunction",
                    "cuFuncGetAttribute", "cuFuncSetAttribute", "cuLaunchKernel",
                    "cuStreamSynchronize", "cuGetErrorName", "cuGetErrorString",
                    "cuMemcpyHtoDAsync", "cuMemHostAlloc", "cuMemHostGetDevicePointer",
                    "cuStreamQuery", "cuStreamWriteValue32"]
VERSIONED_SYMBOLS = ["cuMemcpyHtoDAsync", "cuMemHostGetDevicePointer", "cuStreamWriteValue32"]
DRIVER_ENUMERATORS = ["CUDA_SUCCESS", "CUDA_ERROR_NOT_READY", "CUDA_ERROR_INVALID_VALUE",
                      "CUDA_ERROR_NOT_SUPPORTED", "CU_STREAM_WRITE_VALUE_DEFAULT",
                      "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
                      "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES", "CU_FUNC_ATTRIBUTE_NUM_REGS",
                      "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", "CU_JIT_ERROR_LOG_BUFFER",
                      "CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES"]
# cuda.h's #defines, by the name driver_api.h gives each (the macro would
# rewrite the same name).
DRIVER_MACROS = {"CU_MEMHOSTALLOC_PORTABLE": "memhostalloc_portable",
                 "CU_MEMHOSTALLOC_DEVICEMAP": "memhostalloc_devicemap"}


def torch_flags() -> list[str]:
    import torch
    from torch.utils import cpp_extension

    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    # BuildExtension's standard for this torch (2.13 moved to C++20).
    std = "c++20" if (major, minor) >= (2, 13) else "c++17"
    flags = [f"-std={std}", "-fPIC", "-D_GLIBCXX_USE_CXX11_ABI=" + str(int(torch._C._GLIBCXX_USE_CXX11_ABI))]
    for d in cpp_extension.include_paths():
        flags += ["-isystem", d]
    import sysconfig
    flags += ["-isystem", sysconfig.get_paths()["include"]]
    return flags


def backend_flags() -> list[str]:
    return ["-I", os.path.join(ROOT, "csrc"), "-I", os.path.join(ROOT, "csrc", "cuda", "include"),
            "-I", cuda_build.msl_prepass.MSL_INCLUDE,
            "-DMPS_OPS_WITH_CUDA=1",
            "-DTORCH_EXTENSION_NAME=_C", "-DTORCH_API_INCLUDE_EXTENSION_H"]


def abi_check_source() -> str:
    lines = ['#include <cuda.h>', '#include "cuda/driver_api.h"', '#include <string_view>',
             '#include <type_traits>',
             "namespace ours = mps_ops::cuda_driver;",
             "// Same arity, and each parameter and the result of the same size and kind",
             "// (cuda.h's CUresult and attribute types are enums; ours are ints or enums",
             "// of int's size): what a call through the resolved pointer relies on.",
             "template <class T> constexpr int kind() {",
             "  return std::is_pointer<T>::value ? 1 : std::is_floating_point<T>::value ? 2 : 3; }",
             "template <class A, class B> struct same_shape : std::false_type {};",
             "template <class RA, class... A, class RB, class... B>",
             "struct same_shape<RA (*)(A...), RB (*)(B...)> {",
             "  static constexpr bool value = sizeof...(A) == sizeof...(B) &&",
             "      sizeof(RA) == sizeof(RB) && ((sizeof(A) == sizeof(B) && kind<A>() == kind<B>()) && ...);",
             "};"]
    for fn in DRIVER_FUNCTIONS:
        lines.append(f"static_assert(same_shape<decltype(&::{fn}), ours::{fn}_t>::value, "
                     f"\"{fn}: driver_api.h differs from cuda.h\");")
    for name in DRIVER_ENUMERATORS:
        lines.append(f"static_assert(int(::{name}) == int(ours::{name}), \"{name}\");")
    for macro, name in DRIVER_MACROS.items():
        lines.append(f"static_assert({macro} == ours::{name}, \"{macro}\");")
    lines.append("static_assert(sizeof(::CUdevice) == sizeof(ours::CUdevice), \"CUdevice\");")
    lines += ["#define MPS_OPS_SPELLED(x) #x", "#define MPS_OPS_SYMBOL(x) MPS_OPS_SPELLED(x)"]
    for fn in VERSIONED_SYMBOLS:
        lines.append(f"static_assert(std::string_view(MPS_OPS_SYMBOL({fn})) == ours::{fn}_symbol, "
                     f"\"{fn}: cuda.h maps it to another symbol\");")
    return "\n".join(lines) + "\n"


def default_cxx() -> str:
    """setup.py's choice (find_clang): the CUDA build compiles host code with it."""
    for name in (os.environ.get("CXX"), "clang++-16", "clang++-17", "clang++-18", "clang++-15",
                 "clang++", "g++"):
        if name and shutil.which(name):
            return name
    return "c++"


def run(command: list[str]) -> tuple[bool, str]:
    done = subprocess.run(command, capture_output=True, text=True)
    return done.returncode == 0, done.stderr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cxx", default=default_cxx(),
                        help="host C++ compiler (default: $CXX, else the clang setup.py builds with)")
    args = parser.parse_args(argv)
    base = [args.cxx, "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"]
    common = base + torch_flags() + backend_flags()
    failures = 0

    def check(label: str, command: list[str]) -> None:
        nonlocal failures
        ok, err = run(command)
        print(f"{'ok' if ok else 'FAILED'} {label}")
        if not ok:
            failures += 1
            print(err)

    for source in CUDA_SOURCES + SELECTION_SOURCES:
        check(os.path.relpath(source, ROOT), common + [source])
    try:
        toolkit = cuda_build.find_cuda_toolkit()
    except cuda_build.ToolError as e:
        toolkit = None
        print(f"skipped the toolkit checks: {e}")
    import torch

    cmake_macros = [os.path.join(d, "c10", "cuda", "impl", "cuda_cmake_macros.h")
                    for d in __import__("torch.utils.cpp_extension").utils.cpp_extension.include_paths()]
    if not any(os.path.exists(p) for p in cmake_macros):
        # A CPU build of torch ships c10/cuda headers without their generated
        # configuration: that path can only be checked against a CUDA torch.
        print(f"skipped torch_cuda.cpp with c10/cuda headers: torch {torch.__version__} is not a CUDA build")
    elif toolkit and os.path.exists(os.path.join(toolkit, "include", "cuda_runtime_api.h")):
        check("csrc/cuda/torch_cuda.cpp with c10/cuda headers (MPS_OPS_CUDA_TORCH_HEADERS)",
              common + ["-DMPS_OPS_CUDA_TORCH_HEADERS=1", "-isystem", os.path.join(toolkit, "include"),
                        os.path.join(ROOT, "csrc", "cuda", "torch_cuda.cpp")])
    if toolkit and os.path.exists(os.path.join(toolkit, "include", "cuda.h")):
        with tempfile.TemporaryDirectory() as tmp:
            probe = os.path.join(tmp, "driver_abi.cpp")
            with open(probe, "w") as f:
                f.write(abi_check_source())
            check("csrc/cuda/driver_api.h against cuda.h",
                  base + ["-std=c++17", "-I", os.path.join(ROOT, "csrc"),
                          "-isystem", os.path.join(toolkit, "include"), probe])
    print(f"check_cuda_backend: {'FAILED' if failures else 'ok'}"
          + (f" ({failures} failed)" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
