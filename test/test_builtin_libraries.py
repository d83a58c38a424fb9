"""The Metal backend's built-in libraries (csrc/metal/builtin_libraries.cpp,
plain C++) driven on Linux against a stand-in MetalLibrary: one library per
kernel file in the source fallback, made at the first lookup of one of its
kernels, a rejected file's error kept to its own kernels, the metallib and
the MPS_OPS_METAL_FROM_SOURCE switch, the table's slots on each kernel, and
the declared-slot check both backends share. Needs no built extension.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _compiler():
    return next(c for c in ("clang++-16", "clang++-17", "clang++-18", "clang++-15", "clang++")
                if shutil.which(c))


def test_builtin_libraries_driver(tmp_path):
    torch_dir = os.path.dirname(torch.__file__)
    exe = tmp_path / "builtin_libraries_driver"
    subprocess.run([
        _compiler(), "-std=c++20", "-O0", "-Wall", "-Wextra", "-Werror", "-pthread",
        "-I", os.path.join(ROOT, "csrc"), "-isystem", os.path.join(torch_dir, "include"),
        os.path.join(HERE, "builtin_libraries", "builtin_libraries_driver.cpp"),
        os.path.join(ROOT, "csrc", "metal", "builtin_libraries.cpp"),
        "-o", str(exe), "-L", os.path.join(torch_dir, "lib"), "-lc10",
        f"-Wl,-rpath,{os.path.join(torch_dir, 'lib')}",
    ], check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().endswith(" passed, 0 failed"), run.stdout
