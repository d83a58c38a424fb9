"""PyTorch's C++ headers from a macOS arm64 wheel, for type-checking the Metal
backend on Linux against torch releases other than the installed one.

    python tools/torch_headers.py 2.15.0     # prints .../torch-headers/2.15.0/torch/include
    python tools/torch_headers.py --bounds   # the oldest and newest supported release

The wheel is downloaded from PyPI with pip (no dependencies, wheel only) into a
cache outside the repository (`$MPS_OPS_CACHE`, else `$XDG_CACHE_HOME/mps_ops`,
else `~/.cache/mps_ops`), `wheels/<version>/`, where tools/mps_coverage.py
reads it too; only `torch/include/` is unpacked, beside it, so a fresh clone
on the same machine (CI) reuses both. A cached version is never downloaded
again.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from typing import Callable, Sequence

# The torch releases mps_ops supports, oldest first. setup.py's install_requires,
# csrc/metal/torch_mps_adapter.h's #error and the docs say the same
# lower bound; test/test_tools.py checks that they agree with this.
OLDEST_SUPPORTED = "2.9.1"
NEWEST_SUPPORTED = "2.15.0"

PYTHON_VERSION = "3.11"
# The marker that a cached tree is complete (unpacked last).
MARKER = os.path.join("ATen", "mps", "MPSStream.h")


def wheel_platform(version: str) -> str:
    """The macOS platform tag torch published arm64 wheels under: 11.0 up to
    2.11, 14.0 from 2.12 on (torch raised its minimum macOS)."""
    major, minor = (int(p) for p in version.split(".")[:2])
    return "macosx_11_0_arm64" if (major, minor) <= (2, 11) else "macosx_14_0_arm64"


def cache_root() -> str:
    explicit = os.environ.get("MPS_OPS_CACHE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mps_ops")


def include_dir(version: str, root: str | None = None) -> str:
    return os.path.join(root or cache_root(), "torch-headers", version, "torch", "include")


def pip_download_command(version: str, dest: str) -> list[str]:
    return [
        sys.executable, "-m", "pip", "download", f"torch=={version}",
        "--platform", wheel_platform(version),
        "--python-version", PYTHON_VERSION,
        "--only-binary=:all:", "--no-deps", "--quiet",
        "-d", dest,
    ]


def unpack_includes(wheel: str, dest: str) -> int:
    """Extracts the wheel's torch/include/ tree under dest; returns the file count."""
    count = 0
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            if member.filename.startswith("torch/include/") and not member.is_dir():
                archive.extract(member, dest)
                count += 1
    return count


def pip_environment() -> dict[str, str]:
    """pip without the machine's configuration files: a machine may cap torch
    at the releases it keeps on disk (a pip constraints file), which says
    nothing about the macOS wheels wanted here."""
    return dict(os.environ, PIP_CONFIG_FILE=os.devnull)


def cached_wheel(
    version: str,
    root: str | None = None,
    run: Callable[..., subprocess.CompletedProcess] = subprocess.run,
) -> str:
    """The path of torch==version's macOS arm64 wheel, downloaded once
    (root: the cache, default cache_root(); run: subprocess.run, for tests)."""
    target = os.path.join(root or cache_root(), "wheels", version)
    found = glob.glob(os.path.join(target, "torch-*.whl"))
    if len(found) == 1:
        return found[0]
    os.makedirs(os.path.dirname(target), exist_ok=True)
    # Download beside the cache entry and rename: an interrupted download never
    # leaves a truncated wheel where a complete one is expected.
    with tempfile.TemporaryDirectory(dir=os.path.dirname(target)) as scratch:
        run(pip_download_command(version, scratch), check=True, env=pip_environment())
        wheels = glob.glob(os.path.join(scratch, "torch-*.whl"))
        if len(wheels) != 1:
            raise RuntimeError(f"expected one torch wheel for {version}, pip left {wheels}")
        shutil.rmtree(target, ignore_errors=True)
        os.makedirs(target)
        os.replace(wheels[0], os.path.join(target, os.path.basename(wheels[0])))
    return glob.glob(os.path.join(target, "torch-*.whl"))[0]


def fetch(
    version: str,
    root: str | None = None,
    run: Callable[..., subprocess.CompletedProcess] = subprocess.run,
) -> str:
    """The include directory of torch==version's macOS wheel, unpacked once
    (root: the cache, default cache_root(); run: subprocess.run, for tests)."""
    target = include_dir(version, root)
    if os.path.isfile(os.path.join(target, MARKER)):
        return target
    wheel = cached_wheel(version, root, run)
    version_dir = os.path.dirname(os.path.dirname(target))
    os.makedirs(os.path.dirname(version_dir), exist_ok=True)
    # Unpack next to the cache entry, then rename: an interrupted run never
    # leaves a half-unpacked tree that looks complete.
    with tempfile.TemporaryDirectory(dir=os.path.dirname(version_dir)) as scratch:
        staged = os.path.join(scratch, "tree")
        if unpack_includes(wheel, staged) == 0:
            raise RuntimeError(f"{os.path.basename(wheel)} has no torch/include/")
        if not os.path.isfile(os.path.join(staged, "torch", "include", MARKER)):
            raise RuntimeError(f"{os.path.basename(wheel)} has no {MARKER} (not an MPS build?)")
        shutil.rmtree(version_dir, ignore_errors=True)
        os.replace(staged, version_dir)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="*", help="torch releases, e.g. 2.9.1")
    parser.add_argument("--bounds", action="store_true",
                        help="print the oldest and newest supported release and exit")
    args = parser.parse_args(argv)
    if args.bounds:
        print(OLDEST_SUPPORTED, NEWEST_SUPPORTED)
        return 0
    if not args.versions:
        parser.error("name a torch release, or --bounds")
    for version in args.versions:
        print(fetch(version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
