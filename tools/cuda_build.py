"""Compile every kernel file to PTX for an NVIDIA GPU (the CUDA target) and
check each with ptxas. No GPU needed.

    python tools/cuda_build.py [--out DIR] [--jobs N] [FILE.metal ...]

Per .metal file: the emulator's preprocessing, the prepass with target "cuda"
(mps_ops/_prepass.py generate_cuda) into DIR/<stem>.cu, clang >= 19 to
DIR/<stem>.ptx for sm_90, then `ptxas -arch=sm_90`. Every host name the
emulator registers for the file (the prepass's instantiations) must be a PTX
entry point of it. DIR/kernels.txt lists `host_name file.ptx buffers threadgroups`
per entry: the last two are the slot masks (hex; bit N: the kernel declares
[[buffer(N)]] / [[threadgroup(N)]]) the CUDA backend requires set at dispatch,
as the emulator's registrars and Metal's embedded table carry them.
Then the compile_shader sources of test/kernels/ (the tests' own kernels),
each into DIR/shaders/<key>.ptx with its list <key>.txt, key a hash of the
source (mps_ops/_prepass.py shader_key): the GPU machine cannot compile at
run time, so compile_shader on the CUDA backend runs these and only these.
Prints each file with its entry points and exits non-zero on any failure.

clang rather than nvcc: the prepass output is MSL-flavoured C++ that relies on
clang's force_cuda_host_device pragma and _Float16 on nvptx (LLVM 19); the
CUDA toolkit provides libdevice and ptxas (tools/bootstrap.sh installs
clang-19; the toolkit is found under /usr/local/cuda*, or CUDA_PATH).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import macos_build  # noqa: E402  (kernel_files, include_dirs: one list of kernel files)
import msl_prepass  # noqa: E402

GPU_ARCH = "sm_90"  # the H100 the CUDA target is checked on
MIN_CLANG = 19  # _Float16 on nvptx, __nvvm_activemask
CLANG_CANDIDATES = ("clang++-19", "clang++-20", "clang++-21", "clang++")
# Not -fexcess-precision=16 (the emulator's): clang rejects it for nvptx, and
# sm_90 rounds every half operation natively anyway.
CLANG_FLAGS = [
    "-x", "cuda", "--cuda-device-only", f"--cuda-gpu-arch={GPU_ARCH}", "-nocudainc",
    "-O3", "-ffp-contract=off", "-fwrapv",
    # clang 19 knows CUDA up to 12.5 and warns about newer toolkits; libdevice
    # and the PTX it emits are fine.
    "-Wno-unknown-cuda-version",
]
MAX_JOBS = 2  # a shared 2-core machine
DEFAULT_OUT = os.path.join(ROOT, "build", "cuda")
BOOTSTRAP_HINT = "run `bash tools/bootstrap.sh` (it installs clang-19 on Debian)"


class ToolError(Exception):
    """A compiler or toolkit this tool needs is missing."""


def clang_major(clang: str) -> int | None:
    try:
        out = subprocess.run([clang, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return None
    m = re.search(r"clang version (\d+)", out)
    return int(m.group(1)) if m else None


def find_clang(explicit: str | None = None) -> str:
    """clang >= 19 (explicit, $CUDA_CLANG, or the first candidate found)."""
    chosen = explicit or os.environ.get("CUDA_CLANG")
    for name in [chosen] if chosen else CLANG_CANDIDATES:
        path = shutil.which(name)
        major = clang_major(path) if path else None
        if major is not None and major >= MIN_CLANG:
            return path
    raise ToolError(f"the CUDA target needs clang >= {MIN_CLANG} "
                    f"({chosen or ', '.join(CLANG_CANDIDATES)} not found or older): {BOOTSTRAP_HINT}")


def is_cuda_toolkit(path: str) -> bool:
    return (os.path.isfile(os.path.join(path, "bin", "ptxas"))
            and bool(glob.glob(os.path.join(path, "nvvm", "libdevice", "libdevice*.bc"))))


def find_cuda_toolkit(explicit: str | None = None) -> str:
    """A CUDA toolkit with ptxas and libdevice: explicit, $CUDA_PATH,
    $CUDA_HOME, /usr/local/cuda, else the newest /usr/local/cuda-*."""
    if explicit:
        candidates = [explicit]
    else:
        versioned = sorted(glob.glob("/usr/local/cuda-*"),
                           key=lambda p: [int(n) for n in re.findall(r"\d+", os.path.basename(p))],
                           reverse=True)
        candidates = [os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda",
                      *versioned]
    for path in filter(None, candidates):
        if is_cuda_toolkit(path):
            return os.path.realpath(path)
    raise ToolError("no CUDA toolkit with bin/ptxas and nvvm/libdevice found "
                    f"(looked at {', '.join(filter(None, candidates)) or 'nothing'}); "
                    "install one or set CUDA_PATH")


def ptx_entries(ptx: str) -> list[str]:
    """The kernel entry points a PTX module exports."""
    return re.findall(r"^\.visible\s+\.entry\s+(\w+)\s*\(", ptx, re.MULTILINE)


@dataclass
class FileResult:
    metal: str
    ptx: str
    expected: list[str] = field(default_factory=list)  # host names the emulator registers
    slots: dict[str, tuple[int, int]] = field(default_factory=dict)  # host name -> slot masks
    entries: list[str] = field(default_factory=list)   # PTX entry points
    spills: list[str] = field(default_factory=list)    # ptxas's spill warnings
    seconds: float = 0.0
    error: str = ""

    @property
    def missing(self) -> list[str]:
        return sorted(set(self.expected) - set(self.entries))

    @property
    def ok(self) -> bool:
        return not self.error and not self.missing


def _run(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True)


def build_file(metal: str, out_dir: str, clang: str, toolkit: str, stem: str | None = None) -> FileResult:
    """One .metal file to <stem>.cu, <stem>.ptx (stem: the file's, unless
    given), checked by ptxas."""
    start = time.monotonic()
    stem = stem or os.path.splitext(os.path.basename(metal))[0]
    cu = os.path.join(out_dir, f"{stem}.cu")
    result = FileResult(metal, os.path.join(out_dir, f"{stem}.ptx"))
    origin = os.path.relpath(metal, ROOT)
    try:
        source = msl_prepass.preprocess(metal, clang, macos_build.include_dirs())
        scanned = msl_prepass.scan(source)
        instantiated = msl_prepass.instantiated_kernels(scanned, origin)
        result.expected = [inst.host_name for inst, _ in instantiated]
        result.slots = {inst.host_name: msl_prepass.slot_masks(kernel) for inst, kernel in instantiated}
        msl_prepass.write_if_changed(cu, msl_prepass.generate(source, origin, "cuda"))
    except msl_prepass.PrepassError as e:
        result.error = f"prepass: {e}"
        return result
    include = [arg for d in msl_prepass.CUDA_INCLUDE_DIRS for arg in ("-I", d)]
    compiled = _run([clang, *CLANG_FLAGS, f"--cuda-path={toolkit}", *include, "-S", cu,
                     "-o", result.ptx])
    if compiled.returncode != 0:
        result.error = f"clang:\n{compiled.stderr}"
        return result
    with open(result.ptx) as f:
        result.entries = ptx_entries(f.read())
    checked = _run([os.path.join(toolkit, "bin", "ptxas"), f"-arch={GPU_ARCH}", "--warn-on-spills",
                    result.ptx, "-o", os.devnull])
    if checked.returncode != 0:
        result.error = f"ptxas:\n{checked.stderr}"
    result.spills = [line for line in checked.stderr.splitlines() if "spill" in line.lower()]
    result.seconds = time.monotonic() - start
    return result


def build(files: list[str], out_dir: str, clang: str, toolkit: str,
          jobs: int = MAX_JOBS, stems: list[str] | None = None) -> list[FileResult]:
    os.makedirs(out_dir, exist_ok=True)
    jobs = max(1, min(jobs, MAX_JOBS))
    stems = stems or [None] * len(files)
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda f, s: build_file(f, out_dir, clang, toolkit, s), files, stems))


def write_kernel_list(results: list[FileResult], out_dir: str, name: str = "kernels.txt",
                      prefix: str = "", keep_other_files: bool = False) -> str:
    """The list the CUDA backend reads: `host_name file.ptx buffers
    threadgroups`, the PTX named relative to the PTX directory (prefix: the
    subdirectory of a prebuilt shader's). keep_other_files: the lines of an
    existing list for PTX files not in results stay (a rebuild of some
    kernel files; without them the carried build/cuda lost every other
    kernel)."""
    path = os.path.join(out_dir, name)
    lines = [f"{name} {prefix}{os.path.basename(r.ptx)} {r.slots[name][0]:#x} {r.slots[name][1]:#x}"
             for r in results for name in r.entries if name in r.slots]
    if keep_other_files and os.path.exists(path):
        rebuilt = {prefix + os.path.basename(r.ptx) for r in results}
        with open(path) as f:
            lines += [line.rstrip("\n") for line in f if len(line.split()) > 1 and line.split()[1] not in rebuilt]
    lines = sorted(lines)
    msl_prepass.write_if_changed(path, "".join(line + "\n" for line in lines))
    return path


SHADER_SUBDIR = "shaders"


def build_shaders(out_dir: str, clang: str, toolkit: str, jobs: int) -> list[FileResult]:
    """The compile_shader sources of test/kernels/, each to
    shaders/<shader_key>.ptx with its kernel list <shader_key>.txt, which
    compile_shader on the CUDA backend looks up by the source's key."""
    sources = sorted(glob.glob(os.path.join(msl_prepass.PREBUILT_SHADERS, "*.metal")))
    keys = []
    for path in sources:
        with open(path) as f:
            keys.append(msl_prepass.shader_key(f.read()))
    shader_dir = os.path.join(out_dir, SHADER_SUBDIR)
    results = build(sources, shader_dir, clang, toolkit, jobs, keys)
    for result, key in zip(results, keys):
        write_kernel_list([result], shader_dir, f"{key}.txt", f"{SHADER_SUBDIR}/")
    return results


def report(results: list[FileResult], seconds: float) -> bool:
    for r in results:
        name = os.path.relpath(r.metal, ROOT)
        if r.error:
            print(f"FAILED {name}: {r.error}")
            continue
        status = "ok" if r.ok else "MISSING ENTRIES"
        print(f"{status} {name} -> {os.path.relpath(r.ptx, ROOT) if r.ptx.startswith(ROOT) else r.ptx}: "
              f"{len(r.entries)} entry points, {r.seconds:.1f} s")
        print("    " + " ".join(r.entries))
        if r.spills:
            # Spilling is legal (every entry is bounded to 1024 threads, so at
            # most 64 registers): a cost, not a failure.
            stores = [int(n) for n in re.findall(r"(\d+) bytes spill stores", "\n".join(r.spills))]
            print(f"    ptxas: registers spilled to local memory in {len(r.spills)} functions "
                  f"(up to {max(stores, default=0)} bytes of spill stores)")
        if r.missing:
            print(f"    no PTX entry for: {' '.join(r.missing)}")
    failed = [r for r in results if not r.ok]
    entries = sum(len(r.entries) for r in results)
    print(f"cuda_build: {len(results) - len(failed)}/{len(results)} files, {entries} entry points "
          f"for {GPU_ARCH}, ptxas checked, {seconds:.1f} s" + (f"; {len(failed)} FAILED" if failed else ""))
    return not failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*",
                        help="kernel files (default: every csrc/kernels/*.metal); named files replace "
                             "their own entries in an existing kernels.txt and keep the others'")
    parser.add_argument("--out", default=DEFAULT_OUT, help="output directory (default: build/cuda)")
    parser.add_argument("--jobs", type=int, default=MAX_JOBS, help=f"parallel files, at most {MAX_JOBS}")
    parser.add_argument("--clang", help=f"clang++ >= {MIN_CLANG} (default: clang++-19, or $CUDA_CLANG)")
    parser.add_argument("--cuda-path", help="CUDA toolkit (default: $CUDA_PATH or /usr/local/cuda*)")
    args = parser.parse_args(argv)
    try:
        clang = find_clang(args.clang)
        toolkit = find_cuda_toolkit(args.cuda_path)
    except ToolError as e:
        print(f"cuda_build: {e}", file=sys.stderr)
        return 2
    files = [os.path.abspath(f) for f in args.files] or macos_build.kernel_files()
    if not files:
        print("cuda_build: no .metal files", file=sys.stderr)
        return 2
    print(f"cuda_build: {clang}, CUDA toolkit {toolkit}, {len(files)} files -> {args.out}")
    start = time.monotonic()
    results = build(files, os.path.abspath(args.out), clang, toolkit, args.jobs)
    write_kernel_list(results, os.path.abspath(args.out), keep_other_files=bool(args.files))
    built = report(results, time.monotonic() - start)
    if args.files:
        return 0 if built else 1
    start = time.monotonic()
    shaders = build_shaders(os.path.abspath(args.out), clang, toolkit, args.jobs)
    print("cuda_build: compile_shader sources built ahead (test/kernels/):")
    return 0 if report(shaders, time.monotonic() - start) and built else 1


if __name__ == "__main__":
    sys.exit(main())
