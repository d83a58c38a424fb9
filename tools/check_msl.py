"""Strict checks over every kernel source that C++ would accept and Apple's
Metal compiler would not.

    python tools/check_msl.py            # all csrc/kernels/*.metal and their headers

1. The lint of mps_ops/_msl_lint.py (compile_shader runs it too): double,
   the C++ standard library, exceptions, new/delete, virtual, goto, RTTI,
   inline assembly, C++17 `if constexpr`, static and namespace-scope
   variables (MSL has no such storage but `constant`), textures and samplers
   (not emulated, so untested), and direct recursion.
2. Each .metal file's emulator translation, compiled with -std=c++14
   -fsyntax-only: MSL before Metal 4 is C++14, so C++17 features that the
   emulator build (-std=c++20, torch's) would accept fail here.

The address-space check (clang's C++ for OpenCL mode) is part of the
emulator issue and not here yet.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import msl_prepass  # noqa: E402

def _load_lint():
    """mps_ops/_msl_lint.py by path: importing the package needs the built extension."""
    spec = importlib.util.spec_from_file_location("mps_ops_msl_lint", os.path.join(ROOT, "mps_ops", "_msl_lint.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


msl_lint = _load_lint()


def lint(path: str) -> list[str]:
    with open(path) as f:
        found = msl_lint.problems(f.read())
    return [f"{os.path.relpath(path, ROOT)}:{lineno}: {what}" for lineno, what in found]


def recursion(metal: str, cxx: str) -> list[str]:
    """Functions that call themselves directly (MSL forbids recursion)."""
    try:
        scan = msl_prepass.scan(msl_prepass.preprocess(metal, cxx, [msl_prepass.KERNEL_INCLUDE]))
    except msl_prepass.PrepassError as e:
        return [f"{os.path.relpath(metal, ROOT)}: prepass: {e}"]
    return [f"{os.path.relpath(metal, ROOT)}: {name} calls itself (MSL forbids recursion)"
            for name in msl_lint.self_calls(scan.unqualified_calls)]


def compile_cpp14(metal: str, cxx: str) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "kernel.cpp")
        try:
            msl_prepass.translate(metal, out, cxx)
        except msl_prepass.PrepassError as e:
            return [f"{os.path.relpath(metal, ROOT)}: prepass: {e}"]
        proc = subprocess.run(
            [cxx, "-std=c++14", "-fsyntax-only", "-Wno-unknown-attributes",
             *(f"-I{d}" for d in msl_prepass.EMULATOR_INCLUDES), out],
            capture_output=True, text=True,
        )
        if proc.returncode != 0:
            return [f"{os.path.relpath(metal, ROOT)}: not valid C++14:\n{proc.stderr[:4000]}"]
    return []


def kernel_files() -> tuple[list[str], list[str]]:
    metal = sorted(glob.glob(os.path.join(ROOT, "csrc", "kernels", "*.metal")))
    # The shared headers under include/ and each family's parameter header
    # beside its kernels (plain C++ the host stub includes too).
    headers = sorted(glob.glob(os.path.join(ROOT, "csrc", "kernels", "include", "**", "*.h"), recursive=True) +
                     glob.glob(os.path.join(ROOT, "csrc", "kernels", "*.h")))
    return metal, headers


def main() -> int:
    cxx = os.environ.get("CXX") or next(
        (c for c in ("clang++-16", "clang++-17", "clang++-18", "clang++-15", "clang++")
         if subprocess.run(["which", c], capture_output=True).returncode == 0),
        "clang++",
    )
    metal, headers = kernel_files()
    problems = []
    for path in metal + headers:
        problems += lint(path)
    for path in metal:
        problems += recursion(path, cxx)
        problems += compile_cpp14(path, cxx)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"check_msl: {len(metal)} .metal files, {len(headers)} headers, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
