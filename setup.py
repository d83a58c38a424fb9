"""Build mps_ops._C.

Linux: every csrc/kernels/*.metal goes through the emulator prepass
(mps_ops/_prepass.py) and is compiled as C++ with clang (_Float16 needs clang
15 or newer; clang-16 is what .ci/run installs).

macOS with an MPS build of torch: the Metal backend (csrc/metal/, the
only Objective-C++). tools/macos_build.py compiles the kernels to one
.metallib embedded in the extension (without a Metal toolchain, none), and
embeds each kernel file's header-expanded source, compiled at first use where
there is no metallib, and the table of kernels (host name, file, slots). This branch has not
been run on a Mac yet (docs/macos.md). MPS_OPS_PRINT_METAL_PLAN=1 prints the
Metal commands on any machine.

Linux with a CUDA build of torch and an NVIDIA GPU (MPS_OPS_BACKEND=cuda, or
automatically when torch.cuda.is_available() and build/cuda/kernels.txt
exists): the CUDA backend (csrc/cuda/), a stand-in for an Apple GPU. Only the
host code is compiled here, with the emulator's clang and flags (the host code
is the same); the kernels are
the PTX tools/cuda_build.py wrote under build/cuda (clang-19, built where it is
and carried with the tree), loaded at run time. The emulator is not in this
build: emulator-only tests skip.

MPS_OPS_BACKEND=emulator|cuda|metal forces a backend (default: auto).

Install with `pip install --no-build-isolation -e .` after torch: an isolated
build would fetch another torch.
"""

import glob
import os
import shutil
import sys

from setuptools import setup

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import codegen  # noqa: E402
import macos_build  # noqa: E402
import msl_prepass  # noqa: E402
from torch.utils.cpp_extension import BuildExtension, CppExtension  # noqa: E402

BUILD = os.path.join(ROOT, "build")
METAL_DIR = os.path.join(ROOT, "csrc", "metal")
METAL_BACKEND = os.path.join(METAL_DIR, "metal_backend.mm")
CUDA_DIR = os.path.join(ROOT, "csrc", "cuda")
PTX_DIR = os.path.join(BUILD, "cuda")  # tools/cuda_build.py's default output
BACKENDS = ("auto", "emulator", "cuda", "metal")


def rel(path):
    return os.path.relpath(path, ROOT)


def find_clang():
    """A C++ compiler with _Float16 on x86 (clang >= 15), for kernels and host alike."""
    explicit = os.environ.get("CXX")
    if explicit:
        return explicit
    for name in ("clang++-16", "clang++-17", "clang++-18", "clang++-15", "clang++"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("mps_ops: no clang++ found; the emulator needs clang >= 15 "
             "(Debian: apt-get install -y clang-16)")


def requested_backend():
    requested = os.environ.get("MPS_OPS_BACKEND", "auto") or "auto"
    if requested not in BACKENDS:
        sys.exit(f"mps_ops: MPS_OPS_BACKEND={requested}: expected one of {', '.join(BACKENDS)}")
    return requested


def use_metal_backend():
    if sys.platform != "darwin" or requested_backend() not in ("auto", "metal"):
        return False
    import torch

    return torch.backends.mps.is_built() and os.path.exists(METAL_BACKEND)


def use_cuda_backend():
    """Asked for, or auto where a GPU is usable and the PTX is there."""
    requested = requested_backend()
    if requested == "cuda":
        return True
    if requested != "auto" or sys.platform == "darwin":
        return False
    import torch

    return torch.cuda.is_available() and os.path.exists(os.path.join(PTX_DIR, "kernels.txt"))


def kernel_sources(cxx):
    """Run the emulator prepass over every .metal file; return the C++ to compile."""
    out = []
    for metal in sorted(glob.glob(os.path.join(ROOT, "csrc", "kernels", "*.metal"))):
        stem = os.path.splitext(os.path.basename(metal))[0]
        target = os.path.join(BUILD, "emulator_kernels", f"kernels_{stem}.cpp")
        try:
            msl_prepass.translate(metal, target, cxx)
        except msl_prepass.PrepassError as e:
            sys.exit(f"mps_ops: emulator prepass failed for {rel(metal)}:\n{e}")
        out.append(target)
    return out


def common_sources():
    entries = codegen.load_registry()
    generated = codegen.generate_cpp(os.path.join(BUILD, "generated"), entries)
    return (
        [os.path.join(ROOT, "csrc", "python", "module.cpp")]
        + sorted(glob.glob(os.path.join(ROOT, "csrc", "runtime", "*.cpp")))
        + generated
    )


def metal_extension():
    """The Metal backend: Apple's compiler for host code, the embedded kernels."""
    mode, embedded = macos_build.build(os.path.join(BUILD, "metal"))
    print(f"mps_ops: Metal backend, kernels embedded as {mode}")
    # The Objective-C++ files and the plain C++ ones beside them (csrc/runtime/
    # *.cpp are common_sources; csrc/metal/ is built only here).
    metal_sources = sorted(glob.glob(os.path.join(METAL_DIR, "*.mm")) +
                           glob.glob(os.path.join(METAL_DIR, "*.cpp")))
    sources = common_sources() + metal_sources + [embedded]
    return CppExtension(
        name="mps_ops._C",
        sources=[rel(s) for s in sources],
        include_dirs=[os.path.join(ROOT, "csrc")],
        define_macros=[("MPS_OPS_WITH_METAL", "1")],
        # PyTorch's MPS code manages Objective-C objects by hand; so do we.
        extra_compile_args={"cxx": ["-O2", "-fno-objc-arc"] + torch_abi_flags()},
        extra_link_args=["-framework", "Metal", "-framework", "Foundation"],
    )


# The emulator's flags, for host code too: one set for every translation unit
# (BuildExtension has no per-file flags), and the CUDA build's host code is the
# same code.
HOST_FLAGS = [
    "-O2",
    # No debug info (Python's own CFLAGS ask for -g): it added about a
    # tenth to a host stub's compile time.
    "-g0",
    # Metal does not contract a*b+c unless asked; integers wrap on the GPU.
    "-ffp-contract=off",
    "-fwrapv",
    # half arithmetic rounds after every operation, as on the GPU.
    "-fexcess-precision=16",
    # MSL attributes ([[buffer(0)]] ...) mean nothing to the C++ compiler.
    "-Wno-unknown-attributes",
]


def torch_abi_flags():
    """torch's libstdc++ ABI, stated: torch's extension builder no longer
    passes it, and a compiler of another default would build std::string
    and c10::Error in another layout."""
    import torch
    return [f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"]


# libstdc++ shared, as torch has it: streams, strings and exceptions cross
# between torch and us. The H100 machine's /opt/gcc/bin/g++ links libstdc++
# statically; the extension then held its own copy, whose locale facets do
# not match the streams torch's copy set up, and every error message crashed
# in std::ostream::_M_insert<long>. Named first, the shared library resolves
# every libstdc++ symbol, so a static copy adds nothing (by file name: that
# compiler finds no libstdc++.so link to take for -lstdc++).
SHARED_LIBSTDCXX = ["-l:libstdc++.so.6"] if sys.platform.startswith("linux") else []


def use_clang():
    cxx = find_clang()
    os.environ["CXX"] = cxx
    os.environ.setdefault("CC", cxx.replace("clang++", "clang"))
    return cxx


def cuda_extension():
    """The CUDA backend: host code only; the kernels are build/cuda's PTX,
    loaded at run time through libcuda (nothing links CUDA's driver)."""
    import torch
    from torch.utils import cpp_extension

    if not os.path.exists(os.path.join(PTX_DIR, "kernels.txt")):
        sys.exit(f"mps_ops: the CUDA backend needs the PTX in {rel(PTX_DIR)}: run "
                 "`python tools/cuda_build.py` where clang-19 is and bring build/cuda with the tree")
    sources = common_sources() + sorted(glob.glob(os.path.join(CUDA_DIR, "*.cpp")))
    define_macros = [("MPS_OPS_WITH_CUDA", "1")]
    # msl_prepass.MSL_INCLUDE: launch_abi.h shares grid3 with the kernels' side.
    include_dirs = [os.path.join(ROOT, "csrc"), os.path.join(CUDA_DIR, "include"), msl_prepass.MSL_INCLUDE]
    libraries = []
    cuda_home = cpp_extension.CUDA_HOME
    if torch.version.cuda and cuda_home and os.path.exists(
            os.path.join(cuda_home, "include", "cuda_runtime_api.h")):
        # torch's current stream through c10/cuda, as CUDA extensions get it
        # (csrc/cuda/torch_cuda.cpp); libc10_cuda is torch's, already loaded.
        define_macros.append(("MPS_OPS_CUDA_TORCH_HEADERS", "1"))
        include_dirs.append(os.path.join(cuda_home, "include"))
        libraries.append("c10_cuda")
        how = f"torch {torch.__version__} c10/cuda headers from {cuda_home}"
    else:
        how = "torch's device-generic stream interface"
    print(f"mps_ops: CUDA backend, PTX from {rel(PTX_DIR)}, current stream through {how}")
    # Host code only, so the compiler torch's own extensions use (g++). The
    # emulator's FP flags concern kernels, which are PTX here.
    return CppExtension(
        name="mps_ops._C",
        sources=[rel(s) for s in sources],
        include_dirs=include_dirs,
        define_macros=define_macros,
        libraries=libraries,
        extra_compile_args={"cxx": ["-O2", "-g0"] + torch_abi_flags()},
        extra_link_args=SHARED_LIBSTDCXX,
    )


def extension():
    if os.environ.get("MPS_OPS_PRINT_METAL_PLAN") == "1":
        for command in macos_build.metal_build_plan(
            [rel(f) for f in macos_build.kernel_files(ROOT)],
            [rel(i) for i in macos_build.include_dirs(ROOT)],
            "build/metal/air",
        ):
            print(" ".join(command))
    if use_metal_backend():
        return metal_extension()
    if use_cuda_backend():
        return cuda_extension()
    if sys.platform == "darwin":
        print("mps_ops: torch without MPS or MPS_OPS_BACKEND=emulator: building the CPU emulator backend")
    cxx = use_clang()
    sources = common_sources()
    define_macros = []
    sources += sorted(glob.glob(os.path.join(ROOT, "csrc", "emulator", "*.cpp")))
    sources += kernel_sources(cxx)
    flags = HOST_FLAGS + torch_abi_flags()
    return CppExtension(
        name="mps_ops._C",
        sources=[rel(s) for s in sources],
        include_dirs=[
            os.path.join(ROOT, "csrc"),
            *msl_prepass.EMULATOR_INCLUDES,
        ],
        define_macros=define_macros,
        extra_compile_args={"cxx": flags},
        extra_link_args=SHARED_LIBSTDCXX,
    )


setup(
    name="mps_ops",
    version="0.1.0",
    description="Native Metal kernels for PyTorch operators the MPS backend lacks",
    packages=["mps_ops", "mps_ops.samples", "mps_ops.audit"],
    # tools/mps_coverage.py's per-release MPS data, read by mps_ops.audit.
    package_data={"mps_ops": ["data/mps_coverage.json"]},
    ext_modules=[extension()],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
    python_requires=">=3.9",
    install_requires=["torch>=2.9", "numpy"],
)
