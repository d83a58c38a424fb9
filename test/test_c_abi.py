"""The built extension's dynamic linkage, and the C ABI driven from C++
(test/c_abi/c_abi_driver.cpp) against it: libstdc++ shared with torch,
symbols exported, a kernel run through them, errors as codes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig

import pytest
import torch

import mps_ops

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SYMBOLS = [
    "create_shader_library", "load_metallib", "delete_shader_library", "get_kernel_function",
    "delete_kernel_function", "start_encoding", "set_arg_tensor", "set_arg_int", "set_arg_float",
    "set_arg_bytes", "set_threadgroup_memory",
    "dispatch_single", "dispatch_single_with_group_size", "dispatch_array",
    "dispatch_array_with_group_size", "run_command_block", "last_error",
]


def _compiler():
    return next(c for c in ("clang++-16", "clang++-17", "clang++-18", "clang++-15", "clang++", "c++")
                if shutil.which(c))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="libstdc++ is Linux's C++ library")
def test_extension_shares_torchs_libstdcxx():
    """A static copy of libstdc++ in the extension (a compiler that links it
    so) crashes the first error message that streams a number: its locale
    facets are not those of the streams torch's copy set up."""
    dynamic = subprocess.run(["readelf", "-d", mps_ops._C.__file__], capture_output=True, text=True,
                             check=True).stdout
    assert "[libstdc++.so.6]" in dynamic, dynamic
    defined = subprocess.run(["nm", "-D", "-C", "--defined-only", mps_ops._C.__file__],
                             capture_output=True, text=True, check=True).stdout
    assert "std::ostream::_M_insert" not in defined


def test_c_abi_symbols_are_exported():
    out = subprocess.run(["nm", "-D", "--defined-only", mps_ops._C.__file__],
                         capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines()}
    missing = [s for s in SYMBOLS if f"mps_ops_{s}" not in exported]
    assert not missing, missing


@pytest.mark.skipif(mps_ops.backend == "cuda", reason="the driver compiles a kernel source of its own, and the "
                    "CUDA backend runs only the sources of test/kernels/, built ahead")
def test_c_abi_drives_a_kernel(tmp_path):
    torch_dir = os.path.dirname(torch.__file__)
    ext = mps_ops._C.__file__
    libdir = sysconfig.get_config_var("LIBDIR")
    exe = tmp_path / "c_abi_driver"
    cmd = [
        _compiler(), "-std=c++17", "-O0", "-pthread", os.path.join(HERE, "c_abi", "c_abi_driver.cpp"), "-o", str(exe),
        "-I", os.path.join(ROOT, "csrc", "include"),
        "-I", os.path.join(torch_dir, "include"),
        "-I", sysconfig.get_paths()["include"],
        ext, "-L", os.path.join(torch_dir, "lib"), "-ltorch", "-ltorch_cpu", "-lc10", "-ltorch_python",
        "-L", libdir, f"-lpython{sys.version_info.major}.{sys.version_info.minor}",
        f"-Wl,-rpath,{os.path.join(torch_dir, 'lib')}", f"-Wl,-rpath,{libdir}",
        f"-Wl,-rpath,{os.path.dirname(ext)}",
        # DT_RPATH, not RUNPATH: it also finds what the extension itself
        # needs from torch/lib (libc10_cuda on a CUDA build).
        "-Wl,--disable-new-dtags",
    ]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, *sys.path]))
    run = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 failed" in run.stdout
