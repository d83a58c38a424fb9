"""macOS build of the kernels: one .metallib embedded in the extension (when
the Metal toolchain is there), each kernel file's header-expanded source, and
a table of every kernel's host name, file and declared argument slots.

The result is one generated C++ file defining the symbols declared in
csrc/metal/embedded_kernels.h (it includes that header). The backend
loads the metallib, or, without one or with MPS_OPS_METAL_FROM_SOURCE=1,
compiles one file's source when one of its kernels is first used.

setup.py calls build(); `python tools/macos_build.py --dry-run` prints the
commands for this checkout's kernels on any platform.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
from typing import Callable, Iterable, NamedTuple, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# The emulator prepass (tools/msl_prepass.py loads mps_ops/_prepass.py by path:
# importing the package would need the built extension).
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import msl_prepass  # noqa: E402

# MSL 3.1 is what macOS 14 runs (bfloat needs it); a metallib built for a newer
# language version fails to load on older macOS.
METAL_STD = "-std=metal3.1"
DEPLOYMENT_TARGET = "14.0"
METALLIB_NAME = "mps_ops.metallib"
GENERATED_NAME = "mps_ops_metal_embedded.cpp"

# The header declaring what the generated file defines (include path: csrc/).
EMBEDDED_HEADER = "metal/embedded_kernels.h"

TOOLCHAIN_HINT = (
    "mps_ops: no Metal toolchain (`xcrun -sdk macosx metal` failed), so each kernel file is "
    "compiled from its embedded source when first used; for a prebuilt metallib run "
    "`xcodebuild -downloadComponent MetalToolchain` (Xcode 26+) or install Xcode "
    "(the Command Line Tools alone have no metal compiler)"
)


# ---------------------------------------------------------------------------
# The metallib plan


def metal_build_plan(
    kernel_files: Sequence[str],
    include_dirs: Sequence[str],
    build_dir: str,
    *,
    debug: bool = False,
) -> list[list[str]]:
    """The commands that build one .metallib from kernel_files, in order.

    One `metal -c` per .metal file (each its own translation unit, as in the
    emulator), then one `metallib` linking every .air. Fast math is off, as in
    the source fallback (MTLMathModeSafe). debug=True keeps line tables and the
    sources in the library, for Xcode's shader debugger and Metal captures.
    """
    if not kernel_files:
        raise ValueError("no .metal files to build")
    stems: dict[str, str] = {}
    commands: list[list[str]] = []
    airs: list[str] = []
    for source in kernel_files:
        if not source.endswith(".metal"):
            raise ValueError(f"not a .metal file: {source}")
        stem = os.path.splitext(os.path.basename(source))[0]
        if stem in stems:
            raise ValueError(f"{source} and {stems[stem]} would both build {stem}.air")
        stems[stem] = source
        air = os.path.join(build_dir, f"{stem}.air")
        command = [
            "xcrun", "-sdk", "macosx", "metal",
            METAL_STD,
            f"-mmacosx-version-min={DEPLOYMENT_TARGET}",
            "-fno-fast-math",
        ]
        if debug:
            command += ["-gline-tables-only", "-frecord-sources"]
        for include in include_dirs:
            command += ["-I", include]
        command += ["-c", source, "-o", air]
        commands.append(command)
        airs.append(air)
    commands.append(
        ["xcrun", "-sdk", "macosx", "metallib", *airs, "-o", os.path.join(build_dir, METALLIB_NAME)]
    )
    return commands


def metal_toolchain_available(
    run: Callable[..., subprocess.CompletedProcess] = subprocess.run,
) -> bool:
    """True when `xcrun` finds a metal compiler that runs.

    `xcrun -f metal` alone is not enough on Xcode 26, where the compiler is a
    separate download: the shim is found, and running it fails.
    """
    for probe in (["xcrun", "-sdk", "macosx", "-f", "metal"],
                  ["xcrun", "-sdk", "macosx", "metal", "--version"]):
        try:
            result = run(probe, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        except OSError:
            return False
        if result.returncode != 0:
            return False
    return True


# ---------------------------------------------------------------------------
# Embedding bytes in C++


def c_string_literal_lines(data: bytes, width: int = 76) -> list[str]:
    """data as adjacent C string literals (one per line), ASCII only.

    Printable characters stay as they are; `"`, `\\` and `?` are escaped (no
    trigraphs, whatever the -std); newlines are `\\n` and end a line, so
    embedded source stays readable; every other byte is a three-digit octal
    escape, which can never swallow a following digit.
    """
    lines: list[str] = []
    piece: list[str] = []
    length = 0

    def flush() -> None:
        nonlocal piece, length
        lines.append('"' + "".join(piece) + '"')
        piece, length = [], 0

    for byte in data:
        if byte == 0x0A:
            token = "\\n"
        elif byte == 0x22:
            token = '\\"'
        elif byte == 0x5C:
            token = "\\\\"
        elif 0x20 <= byte < 0x7F and byte != 0x3F:
            token = chr(byte)
        else:
            token = "\\%03o" % byte
        piece.append(token)
        length += len(token)
        if byte == 0x0A or length >= width:
            flush()
    if piece or not lines:
        flush()
    return lines


def _indent(lines: Iterable[str], prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in lines)


def embedded_cpp(
    sources: Sequence[tuple[str, str]],
    kernels: Sequence["KernelRecord"],
    metallib: bytes | None = None,
) -> str:
    """C++ source defining the symbols of EMBEDDED_HEADER: the metallib image
    (empty when None), the (name, MSL text) of each kernel file, one library
    each, and the kernel table (kernel_table())."""
    if not sources:
        raise ValueError("no kernel sources")
    if metallib is not None and not metallib:
        raise ValueError("empty metallib")
    mode = "metallib and sources" if metallib else "sources only"
    parts = [
        f"// Generated by tools/macos_build.py ({mode}). Do not edit.\n",
        f'#include "{EMBEDDED_HEADER}"\n\n',
    ]
    if metallib:
        parts.append("// The metallib image (the literal's trailing NUL is not part of it).\n")
        parts.append("const unsigned char mps_ops_metallib[] =\n")
        parts.append(_indent(c_string_literal_lines(metallib)) + ";\n")
        parts.append(f"const size_t mps_ops_metallib_size = {len(metallib)};\n\n")
    else:
        parts.append("// No metallib: every kernel file is compiled from its source below.\n")
        parts.append('const unsigned char mps_ops_metallib[] = "";\n')
        parts.append("const size_t mps_ops_metallib_size = 0;\n\n")
    parts.append("const char* const mps_ops_kernel_sources[] = {\n")
    for name, text in sources:
        parts.append(f"    // {name}\n")
        parts.append(_indent(c_string_literal_lines(text.encode("utf-8")), "    ") + ",\n")
    parts.append("};\n")
    parts.append("const char* const mps_ops_kernel_source_names[] = {\n")
    for name, _ in sources:
        parts.append("    " + c_string_literal_lines(name.encode("utf-8"), width=1 << 30)[0] + ",\n")
    parts.append("};\n")
    parts.append(f"const size_t mps_ops_kernel_source_count = {len(sources)};\n\n")
    if not kernels:
        raise ValueError("no kernels in the table")
    parts.append("const mps_ops_embedded_kernel mps_ops_embedded_kernels[] = {\n")
    for k in kernels:
        if not 0 <= k.source < len(sources):
            raise ValueError(f"{k.host_name}: source index {k.source} out of range")
        name = c_string_literal_lines(k.host_name.encode("utf-8"), width=1 << 30)[0]
        parts.append(f"    {{{name}, {k.source}u, {k.buffer_slots:#x}u, {k.threadgroup_slots:#x}u}},\n")
    parts.append("};\n")
    parts.append(f"const size_t mps_ops_embedded_kernel_count = {len(kernels)};\n")
    return "".join(parts)


# ---------------------------------------------------------------------------
# The kernel table


class KernelRecord(NamedTuple):
    host_name: str
    source: int  # index of the defining file among the embedded sources
    buffer_slots: int  # bit N: [[buffer(N)]]
    threadgroup_slots: int  # bit N: [[threadgroup(N)]]


def default_cxx() -> str:
    """The C++ compiler that preprocesses kernel files for the table: $CXX, else
    the first clang found (Apple's clang++ on a Mac)."""
    explicit = os.environ.get("CXX")
    if explicit:
        return explicit
    for name in ("clang++", "clang++-16", "clang++-17", "clang++-18", "clang++-15"):
        if shutil.which(name):
            return name
    raise RuntimeError("no clang++ to preprocess the kernel files with (set CXX)")


def kernel_table(
    files: Sequence[str], includes: Sequence[str], cxx: str
) -> list[KernelRecord]:
    """Every host-named kernel of files (index = position in files) with the
    argument slots it declares, sorted by host name.

    The emulator prepass's own scan, over each file preprocessed as Apple's
    compiler sees it: the host names and slots are the ones the emulator
    registers for the same source. A host name defined twice is an error
    (the metallib could hold only one of them).
    """
    prepass = msl_prepass
    records: dict[str, KernelRecord] = {}
    where: dict[str, str] = {}
    for index, path in enumerate(files):
        scanned = prepass.scan(prepass.preprocess(path, cxx, list(includes), for_emulator=False))
        for inst, kernel in prepass.instantiated_kernels(scanned, path):
            if inst.host_name in records:
                raise ValueError(f"host name {inst.host_name} is defined in both "
                                 f"{where[inst.host_name]} and {path}")
            buffers, threadgroups = prepass.slot_masks(kernel)
            records[inst.host_name] = KernelRecord(inst.host_name, index, buffers, threadgroups)
            where[inst.host_name] = path
    return [records[name] for name in sorted(records)]


# ---------------------------------------------------------------------------
# Header expansion for the source fallback

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
_PRAGMA_ONCE = re.compile(r"^\s*#\s*pragma\s+once\b")


def _display(path: str, root: str) -> str:
    rel = os.path.relpath(path, root)
    return (path if rel.startswith("..") else rel).replace(os.sep, "/")


def expand_includes(path: str, include_dirs: Sequence[str], root: str = ROOT) -> str:
    """The text of a .metal file with our own headers inlined, each once.

    A runtime-compiled library cannot see include paths, so every #include
    that resolves under include_dirs (or, for "...", next to the including
    file) is replaced by the header's text, recursively; each header is
    inlined at its first inclusion only (our headers are all #pragma once) and
    its `#pragma once` dropped. Includes that resolve nowhere (<metal_stdlib>
    and Metal's other headers) stay. #line markers keep compiler messages
    pointing at the original files and lines.
    """
    seen: set[str] = set()

    def resolve(kind: str, name: str, including: str) -> str | None:
        candidates = []
        if kind == '"':
            candidates.append(os.path.join(os.path.dirname(including), name))
        candidates += [os.path.join(d, name) for d in include_dirs]
        for candidate in candidates:
            if os.path.isfile(candidate):
                return os.path.realpath(candidate)
        return None

    def expand(file: str) -> list[str]:
        display = _display(file, root)
        with open(file, encoding="utf-8") as f:
            lines = f.read().splitlines()
        out = [f'#line 1 "{display}"']
        for number, line in enumerate(lines, start=1):
            match = _INCLUDE.match(line)
            if match:
                header = resolve(match.group(1), match.group(2), file)
                if header is not None:
                    if header not in seen:
                        seen.add(header)
                        out += expand(header)
                        out.append(f'#line {number + 1} "{display}"')
                    else:
                        out.append(f"// (already inlined above: {match.group(2)})")
                    continue
            if file != top and _PRAGMA_ONCE.match(line):
                out.append("")
                continue
            out.append(line)
        return out

    top = os.path.realpath(path)
    seen.add(top)
    return "\n".join(expand(top)) + "\n"


# ---------------------------------------------------------------------------
# The build step setup.py runs


def kernel_files(root: str = ROOT) -> list[str]:
    return sorted(glob.glob(os.path.join(root, "csrc", "kernels", "*.metal")))


def include_dirs(root: str = ROOT) -> list[str]:
    return [os.path.join(root, "csrc", "kernels", "include")]


def _write_if_changed(path: str, text: str) -> None:
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def embedded_parts(
    files: Sequence[str], includes: Sequence[str], root: str, cxx: str
) -> tuple[list[tuple[str, str]], list[KernelRecord]]:
    """(the (root-relative name, header-expanded MSL) of each file, the kernel
    table), for embedded_cpp."""
    rel = lambda p: os.path.relpath(p, root).replace(os.sep, "/")  # noqa: E731
    sources = [(rel(f), expand_includes(f, includes, root)) for f in files]
    return sources, kernel_table(files, includes, cxx)


def build(
    build_dir: str,
    *,
    root: str = ROOT,
    files: Sequence[str] | None = None,
    includes: Sequence[str] | None = None,
    debug: bool = False,
    cxx: str | None = None,
    run: Callable[..., subprocess.CompletedProcess] = subprocess.run,
) -> tuple[str, str]:
    """Builds the kernels for the Metal backend; returns (mode, generated .cpp).

    mode is "metallib" when the Metal toolchain ran, else "source" (and the
    one-line TOOLCHAIN_HINT is printed); the sources and the kernel table are
    embedded either way. Commands run in root with root-relative paths, so no
    absolute path of this machine lands in the library. Raises
    subprocess.CalledProcessError if the compiler rejects a kernel: a
    toolchain that is there but fails is an error, not a fallback.
    """
    files = list(files if files is not None else kernel_files(root))
    includes = list(includes if includes is not None else include_dirs(root))
    rel = lambda p: os.path.relpath(p, root)  # noqa: E731
    generated = os.path.join(build_dir, GENERATED_NAME)
    sources, kernels = embedded_parts(files, includes, root, cxx or default_cxx())
    if metal_toolchain_available(run):
        air_dir = os.path.join(build_dir, "air")
        os.makedirs(air_dir, exist_ok=True)
        plan = metal_build_plan([rel(f) for f in files], [rel(i) for i in includes], rel(air_dir),
                                debug=debug)
        for command in plan:
            run(command, cwd=root, check=True)
        with open(os.path.join(air_dir, METALLIB_NAME), "rb") as f:
            _write_if_changed(generated, embedded_cpp(sources, kernels, f.read()))
        return "metallib", generated
    print(TOOLCHAIN_HINT)
    _write_if_changed(generated, embedded_cpp(sources, kernels))
    return "source", generated


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="print the metallib commands for this checkout's kernels")
    parser.add_argument("--debug", action="store_true",
                        help="keep line tables and sources in the metallib (shader debugging)")
    parser.add_argument("--emit-source-fallback", metavar="OUT.cpp",
                        help="write the embedded C++ without a metallib (what a Mac without "
                             "the toolchain embeds)")
    parser.add_argument("--require-metallib", action="store_true",
                        help="fail unless the Metal toolchain built the metallib (CI on a Mac)")
    parser.add_argument("--build-dir", default="build/metal")
    args = parser.parse_args(argv)
    files = [os.path.relpath(f, ROOT) for f in kernel_files()]
    includes = [os.path.relpath(i, ROOT) for i in include_dirs()]
    if args.dry_run:
        print(f"# in {ROOT}")
        for command in metal_build_plan(files, includes, os.path.join(args.build_dir, "air"),
                                        debug=args.debug):
            print(shlex.join(command))
        print(f"# then embed {args.build_dir}/air/{METALLIB_NAME}, each file's source and the "
              f"kernel table as {args.build_dir}/{GENERATED_NAME}")
    if args.emit_source_fallback:
        sources, kernels = embedded_parts(kernel_files(), include_dirs(), ROOT, default_cxx())
        _write_if_changed(args.emit_source_fallback, embedded_cpp(sources, kernels))
        print(f"wrote {args.emit_source_fallback} ({len(kernels)} kernels in {len(sources)} files)")
    if not args.dry_run and not args.emit_source_fallback:
        mode, generated = build(os.path.join(ROOT, args.build_dir), debug=args.debug)
        print(f"{mode}: {generated}")
        if args.require_metallib and mode != "metallib":
            print("macos_build: --require-metallib, but there is no working Metal toolchain",
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
