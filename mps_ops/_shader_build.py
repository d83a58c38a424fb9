"""Build a Metal source into an emulator library (a shared object) for
compile_shader on the emulator backend: prepass, then clang. Libraries are
cached on disk by a hash of the source, the headers and the compiler, so a
source is compiled once per machine."""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

from . import _msl_lint, _prepass

CXX_CANDIDATES = ("clang++-16", "clang++-17", "clang++-18", "clang++-15", "clang++")
FLAGS = [
    "-std=c++17", "-O2", "-shared", "-fPIC", "-ffp-contract=off", "-fwrapv",
    "-fexcess-precision=16", "-Wno-unknown-attributes", "-fvisibility=hidden",
    "-DMPS_OPS_EMU_STANDALONE",
]
SOURCE_NAME = "shader.metal"


def compiler() -> str:
    explicit = os.environ.get("CXX")
    if explicit:
        return explicit
    for name in CXX_CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    raise RuntimeError("mps_ops.compile_shader needs clang >= 15 on this platform "
                       "(Debian: apt-get install -y clang-16)")


def cache_dir() -> str:
    root = os.environ.get("MPS_OPS_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mps_ops", "shaders")
    os.makedirs(root, exist_ok=True)
    return root


def _headers_digest() -> str:
    h = hashlib.sha256()
    for d in (_prepass.KERNEL_INCLUDE, *_prepass.EMULATOR_INCLUDES, _prepass.STUB_INCLUDE):
        for path in sorted(glob.glob(os.path.join(d, "**", "*"), recursive=True)):
            if os.path.isfile(path):
                h.update(path.encode())
                with open(path, "rb") as f:
                    h.update(f.read())
    with open(_prepass.__file__, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


_versions: dict = {}


def _compiler_version(cxx: str) -> str:
    """The compiler's own version line: upgrading clang in place must not reuse
    libraries built by the old one."""
    if cxx not in _versions:
        proc = subprocess.run([cxx, "--version"], capture_output=True, text=True)
        _versions[cxx] = proc.stdout
    return _versions[cxx]


def library_key(source: str, cxx: str) -> str:
    h = hashlib.sha256()
    for part in (source, cxx, _compiler_version(cxx), " ".join(FLAGS), _headers_digest()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _syntax_error(message: str, source: str) -> SyntaxError:
    """The compiler's first error, pointing at the line of the user's source."""
    match = re.search(rf"{re.escape(SOURCE_NAME)}:(\d+):(\d+): error: (.*)", message)
    if match is None:
        return SyntaxError(f"Metal shader failed to compile:\n{message}")
    line, col = int(match.group(1)), int(match.group(2))
    lines = source.splitlines()
    text = lines[line - 1] if 0 < line <= len(lines) else None
    return SyntaxError(f"Metal shader failed to compile: {match.group(3)}\n{message}",
                       (SOURCE_NAME, line, col, text))


def _forbidden(source: str, what: str, line: int) -> SyntaxError:
    lines = source.splitlines()
    return SyntaxError(f"Metal shader failed to compile: {what}: Apple's compiler rejects it",
                       (SOURCE_NAME, line, 1, lines[line - 1] if 0 < line <= len(lines) else None))


def check_msl(source: str, preprocessed: str) -> None:
    """The kernel files' MSL lint (mps_ops/_msl_lint.py) and recursion check:
    what the emulator's C++ accepts and a Mac would refuse raises SyntaxError."""
    found = _msl_lint.problems(source)
    if found:
        raise _forbidden(source, found[0][1], found[0][0])
    recursive = _msl_lint.self_calls(_prepass.scan(preprocessed).unqualified_calls)
    if recursive:
        line = next((i for i, text in enumerate(source.splitlines(), 1) if recursive[0] in text), 1)
        raise _forbidden(source, f"{recursive[0]} calls itself (MSL forbids recursion)", line)


def build(source: str) -> str:
    """Returns the path of the shared object for `source`, building it if needed."""
    cxx = compiler()
    target = os.path.join(cache_dir(), library_key(source, cxx) + ".so")
    if os.path.exists(target):
        return target
    with tempfile.TemporaryDirectory(prefix="mps_ops_shader_") as tmp:
        src = os.path.join(tmp, SOURCE_NAME)
        with open(src, "w") as f:
            f.write(source)
        cpp = os.path.join(tmp, "shader.cpp")
        try:
            # Preprocessed once: the checks and the translation read the same text.
            preprocessed = _prepass.preprocess(src, cxx, [])
            check_msl(source, preprocessed)
            _prepass.write_if_changed(cpp, _prepass.generate(preprocessed, SOURCE_NAME))
        except _prepass.PrepassError as e:
            raise _syntax_error(str(e), source) from None
        out = os.path.join(tmp, "shader.so")
        proc = subprocess.run(
            [cxx, *FLAGS, *(f"-I{d}" for d in _prepass.EMULATOR_INCLUDES), cpp, "-o", out],
            capture_output=True, text=True, cwd=tmp,
        )
        if proc.returncode != 0:
            raise _syntax_error(proc.stderr, source)
        # Atomic publish: concurrent builders of one source race harmlessly.
        fd, staged = tempfile.mkstemp(dir=cache_dir(), suffix=".so.tmp")
        os.close(fd)
        shutil.copyfile(out, staged)
        os.replace(staged, target)
    return target
