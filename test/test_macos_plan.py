"""The macOS build, checked on any platform: the metallib plan, the embedded
bytes and sources, and the Objective-C++ type check (tools/check_objc.sh).

Nothing here runs Metal. The checks need clang-16 and fail (never skip)
without it.
"""

from __future__ import annotations

import ast
import os
import random
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import macos_build  # noqa: E402

CLANG = "clang++-16"
MM = os.path.join(ROOT, "csrc", "metal", "metal_backend.mm")
CHECK_OBJC = os.path.join(ROOT, "tools", "check_objc.sh")
KERNELS = [os.path.relpath(f, ROOT) for f in macos_build.kernel_files()]
INCLUDES = [os.path.relpath(d, ROOT) for d in macos_build.include_dirs()]


def _skip_blank(cpp: str, pos: int) -> int:
    while True:
        match = re.compile(r"\s+|//[^\n]*").match(cpp, pos)
        if not match or match.end() == pos:
            return pos
        pos = match.end()


def literal_at(cpp: str, pos: int) -> tuple[bytes, int]:
    """Decodes the adjacent C string literals starting at pos (blanks and //
    comments between them allowed); returns the bytes and the position after."""
    token = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
    data = b""
    pos = _skip_blank(cpp, pos)
    while (match := token.match(cpp, pos)):
        data += ast.literal_eval('b"' + match.group(1) + '"')
        pos = _skip_blank(cpp, match.end())
    return data, pos


def literal_bytes(cpp: str, marker: str) -> bytes:
    """The bytes of the literal right after marker."""
    return literal_at(cpp, cpp.index(marker) + len(marker))[0]


def literal_array(cpp: str, marker: str) -> list[bytes]:
    """The elements of a braced array of string literals right after marker."""
    pos = _skip_blank(cpp, cpp.index(marker) + len(marker))
    assert cpp[pos] == "{"
    items = []
    pos += 1
    while True:
        data, pos = literal_at(cpp, pos)
        items.append(data)
        if cpp[pos] == ",":
            pos = _skip_blank(cpp, pos + 1)
        if cpp[pos] == "}":
            return items
        assert cpp[pos] == '"', f"unexpected {cpp[pos:pos + 20]!r} in a string array"


def test_plan_compiles_each_metal_file_once_then_links_them():
    assert KERNELS, "no csrc/kernels/*.metal in this checkout"
    plan = macos_build.metal_build_plan(KERNELS, INCLUDES, "build/metal/air")
    compiles, link = plan[:-1], plan[-1]
    assert len(compiles) == len(KERNELS)
    airs = []
    for source, command in zip(KERNELS, compiles):
        assert command[:4] == ["xcrun", "-sdk", "macosx", "metal"]
        assert "-std=metal3.1" in command
        assert not any(c.startswith("-std=") and c != "-std=metal3.1" for c in command)
        assert "-fno-fast-math" in command and "-ffast-math" not in command
        assert "-mmacosx-version-min=14.0" in command
        for include in INCLUDES:
            assert command[command.index("-I") + 1] == include
        assert command[command.index("-c") + 1] == source
        air = command[command.index("-o") + 1]
        stem = os.path.splitext(os.path.basename(source))[0]
        assert air == os.path.join("build/metal/air", stem + ".air")
        airs.append(air)
    assert len(set(airs)) == len(airs)
    assert link[:4] == ["xcrun", "-sdk", "macosx", "metallib"]
    assert link[4:-2] == airs
    assert link[-2:] == ["-o", "build/metal/air/mps_ops.metallib"]


def test_plan_debug_keeps_sources_and_refuses_bad_inputs():
    debug = macos_build.metal_build_plan(KERNELS[:1], INCLUDES, "b", debug=True)[0]
    assert "-gline-tables-only" in debug and "-frecord-sources" in debug
    with pytest.raises(ValueError, match="both build"):
        macos_build.metal_build_plan(["a/x.metal", "b/x.metal"], [], "b")
    with pytest.raises(ValueError, match="not a .metal"):
        macos_build.metal_build_plan(["x.cpp"], [], "b")
    with pytest.raises(ValueError):
        macos_build.metal_build_plan([], [], "b")


def test_dry_run_prints_the_plan():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "macos_build.py"), "--dry-run"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    lines = [l for l in out.splitlines() if not l.startswith("#")]
    assert len(lines) == len(KERNELS) + 1
    assert all(l.startswith("xcrun -sdk macosx metal -std=metal3.1 ") for l in lines[:-1])
    assert lines[-1].startswith("xcrun -sdk macosx metallib ")


# A small stand-in for the parts embedded_cpp takes.
TINY_SOURCES = [("a.metal", "kernel void f() {}\n"), ("b.metal", '"quoted" ??= \\ \n')]
TINY_KERNELS = [macos_build.KernelRecord("f", 0, 0x5, 0x0), macos_build.KernelRecord("g", 1, 0x1, 0x2)]


def embedded_sources():
    return [(k, macos_build.expand_includes(os.path.join(ROOT, k), macos_build.include_dirs()))
            for k in KERNELS]


def test_metallib_bytes_round_trip():
    rng = random.Random(0)
    # Every byte value, the characters the encoder escapes, and octal escapes
    # followed by digits (which a \x escape would swallow).
    data = bytes(range(256)) + b'"\\??=\n\x00123\x07\x0089' + bytes(rng.randrange(256) for _ in range(5000))
    cpp = macos_build.embedded_cpp(TINY_SOURCES, TINY_KERNELS, data)
    assert literal_bytes(cpp, "const unsigned char mps_ops_metallib[] =") == data
    assert f"const size_t mps_ops_metallib_size = {len(data)};" in cpp
    # The sources and the table are embedded beside the metallib too, for
    # MPS_OPS_METAL_FROM_SOURCE=1.
    assert "const size_t mps_ops_kernel_source_count = 2;" in cpp
    assert "const size_t mps_ops_embedded_kernel_count = 2;" in cpp
    assert cpp.isascii()


def test_source_fallback_round_trips_and_inlines_our_headers():
    sources = embedded_sources()
    cpp = macos_build.embedded_cpp(sources, TINY_KERNELS)
    assert "const size_t mps_ops_metallib_size = 0;" in cpp
    assert f"const size_t mps_ops_kernel_source_count = {len(KERNELS)};" in cpp
    texts = literal_array(cpp, "const char* const mps_ops_kernel_sources[] =")
    assert len(texts) == len(KERNELS)
    for (name, text), embedded in zip(sources, texts):
        assert embedded == text.encode()
        # Nothing of ours is left to #include; Metal's own headers stay.
        assert not re.search(r"#\s*include\s*[<\"]mps_ops/", text), name
        assert "#include <metal_stdlib>" in text
        assert not re.search(r"^\s*#\s*pragma\s+once", text, re.M), name
        # Every kernel file includes instantiate.h (directly, or through
        # elementwise.h / reduction.h, some both ways): inlined once.
        assert text.count('#line 1 "csrc/kernels/include/mps_ops/instantiate.h"') == 1
        assert text.startswith(f'#line 1 "{name}"')
    names = literal_array(cpp, "const char* const mps_ops_kernel_source_names[] =")
    assert names == [k.encode() for k in KERNELS]


def test_embedded_cpp_refuses_what_the_backend_could_not_use():
    with pytest.raises(ValueError, match="no kernel sources"):
        macos_build.embedded_cpp([], TINY_KERNELS)
    with pytest.raises(ValueError, match="no kernels"):
        macos_build.embedded_cpp(TINY_SOURCES, [])
    with pytest.raises(ValueError, match="out of range"):
        macos_build.embedded_cpp(TINY_SOURCES[:1], TINY_KERNELS)
    with pytest.raises(ValueError, match="empty metallib"):
        macos_build.embedded_cpp(TINY_SOURCES, TINY_KERNELS, b"")


def test_source_fallback_preprocesses_like_the_original(tmp_path):
    """Header expansion changes nothing the preprocessor sees."""
    stub = os.path.join(ROOT, "tools", "msl_stub_include")

    def preprocess(path, *extra):
        out = subprocess.run([CLANG, "-E", "-P", "-x", "c++", "-nostdinc", "-isystem", stub, *extra, path],
                             capture_output=True, text=True, check=True).stdout
        return " ".join(out.split())

    for kernel in KERNELS:
        expanded = tmp_path / os.path.basename(kernel)
        expanded.write_text(macos_build.expand_includes(os.path.join(ROOT, kernel),
                                                        macos_build.include_dirs()))
        original = preprocess(os.path.join(ROOT, kernel), "-I", os.path.join(ROOT, INCLUDES[0]))
        assert preprocess(str(expanded)) == original, kernel


def test_generated_cpp_compiles(tmp_path):
    """Against embedded_kernels.h, which it includes: the compiler holds the
    definitions to the backend's declarations."""
    for name, metallib in (("metallib.cpp", bytes(range(256)) * 4), ("source.cpp", None)):
        path = tmp_path / name
        path.write_text(macos_build.embedded_cpp(TINY_SOURCES, TINY_KERNELS, metallib))
        subprocess.run([CLANG, "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                        "-I", os.path.join(ROOT, "csrc"), str(path)], check=True)


def test_generated_cpp_defines_every_symbol_the_header_declares():
    with open(os.path.join(ROOT, "csrc", macos_build.EMBEDDED_HEADER)) as f:
        header = f.read()
    declared = re.findall(r"^extern const [^;]*?\b(mps_ops_\w+)(?:\[\])?;", header, re.M)
    assert len(declared) == 7, declared
    for metallib in (b"x", None):
        cpp = macos_build.embedded_cpp(TINY_SOURCES, TINY_KERNELS, metallib)
        assert f'#include "{macos_build.EMBEDDED_HEADER}"' in cpp
        defined = re.findall(r"^const [^=]*?\b(mps_ops_\w+)(?:\[\])? =", cpp, re.M)
        assert defined == declared
        assert "extern" not in cpp, "the header is the one declaration"


def test_build_falls_back_to_source_without_a_toolchain(tmp_path, capsys):
    calls = []

    def no_metal(command, **kwargs):
        calls.append(command)
        return subprocess.CompletedProcess(command, 1)

    mode, generated = macos_build.build(str(tmp_path), cxx=CLANG, run=no_metal)
    assert mode == "source"
    assert calls == [["xcrun", "-sdk", "macosx", "-f", "metal"]]
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "xcodebuild -downloadComponent MetalToolchain" in out[0]
    with open(generated) as f:
        assert f"mps_ops_kernel_source_count = {len(KERNELS)};" in f.read()


def test_build_treats_a_shim_without_compiler_as_no_toolchain(tmp_path, capsys):
    # Xcode 26 without the MetalToolchain component: `xcrun -f metal` finds the
    # shim, running it fails.
    def shim_only(command, **kwargs):
        return subprocess.CompletedProcess(command, 0 if "-f" in command else 1)

    assert macos_build.build(str(tmp_path), cxx=CLANG, run=shim_only)[0] == "source"
    capsys.readouterr()


def test_build_runs_the_plan_with_a_toolchain(tmp_path):
    ran = []

    def fake_xcrun(command, **kwargs):
        ran.append(command)
        if command[3] == "metallib":
            out = os.path.join(kwargs["cwd"], command[command.index("-o") + 1])
            with open(out, "wb") as f:
                f.write(b"MTLB fake")
        return subprocess.CompletedProcess(command, 0)

    mode, generated = macos_build.build(str(tmp_path), cxx=CLANG, run=fake_xcrun)
    assert mode == "metallib"
    assert ran[2:] == macos_build.metal_build_plan(
        KERNELS, INCLUDES, os.path.relpath(os.path.join(str(tmp_path), "air"), ROOT))
    with open(generated) as f:
        cpp = f.read()
    assert literal_bytes(cpp, "const unsigned char mps_ops_metallib[] =") == b"MTLB fake"
    # The sources ride along, for MPS_OPS_METAL_FROM_SOURCE=1.
    assert f"mps_ops_kernel_source_count = {len(KERNELS)};" in cpp


def test_check_objc_passes():
    assert shutil.which(CLANG), f"{CLANG} is required (apt-get install -y clang-16)"
    result = subprocess.run(["bash", CHECK_OBJC], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_objc_rejects_a_misspelled_selector(tmp_path):
    with open(MM) as f:
        text = f.read()
    assert "[encoder setBuffer:" in text
    planted = tmp_path / "planted.mm"
    planted.write_text(text.replace("[encoder setBuffer:", "[encoder setBufer:"))
    result = subprocess.run(["bash", CHECK_OBJC, str(planted)], capture_output=True, text=True)
    assert result.returncode != 0
    assert "setBufer:offset:atIndex:" in result.stderr


def test_the_host_stubs_check_has_macos_int64(tmp_path):
    """A params header's `long` strides taken as `const int64_t*` compile on
    Linux (int64_t is long there) and not on a Mac (long long): the host-stubs
    check must see the Mac's type (1803e53 fixed such a stub). That it passes
    the real stubs is .ci/run's own run of it."""
    stub = tmp_path / "strides.mm"
    stub.write_text("#include <cstdint>\n"
                    "struct params { long strides[4]; };\n"
                    "const int64_t* first_stride(const params& p) { return p.strides; }\n")
    result = subprocess.run(["bash", CHECK_OBJC, "--host-stubs", str(stub)], capture_output=True, text=True)
    assert result.returncode != 0, result.stdout + result.stderr
    assert "'const int64_t *' (aka 'const long long *')" in result.stderr


def _braced_block(text: str, start: int) -> str:
    """The text from the first '{' at or after start to its matching '}'."""
    open_at = text.index("{", start)
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[open_at:i + 1]
    raise AssertionError("unbalanced braces")


def test_every_block_on_the_stream_queue_drains_an_autorelease_pool():
    """The stream autoreleases its encoder and command buffer, and dispatch_sync
    runs the block on a Python thread, which has no pool: the block must drain
    one, and catch inside it (an exception leaving a pool skips its pop)."""
    adapter = os.path.join(ROOT, "csrc", "metal", "torch_mps_adapter.h")
    sources = [MM, adapter]
    blocks = []
    for path in sources:
        with open(path) as f:
            text = f.read()
        for match in re.finditer(r"\bdispatch_sync(?:_f)?\s*\(", text):
            blocks.append((path, _braced_block(text, match.end())))
    assert blocks, "no dispatch_sync found"
    for path, block in blocks:
        body = block[1:].lstrip()
        # Only bookkeeping of plain C++ values may precede the pool.
        before_pool = body[:body.index("@autoreleasepool")] if "@autoreleasepool" in body else body
        assert "@autoreleasepool" in body, path
        assert "(*work)" not in before_pool and "[" not in before_pool, path
        pool = _braced_block(body, body.index("@autoreleasepool"))
        assert "(*work)()" in pool and "@catch" in pool and "catch (...)" in pool, path


def test_nothing_runs_foreign_code_on_the_stream_queue_and_reentry_is_refused():
    """torch's MPS ops dispatch_sync onto the stream's queue: a command block
    must not run there, and run_serially refuses (before dispatch_sync) to be
    entered from a block already on the queue, which would never return."""
    adapter = os.path.join(ROOT, "csrc", "metal", "torch_mps_adapter.h")
    with open(MM) as f:
        mm = f.read()
    block = _braced_block(mm, mm.index("void run_command_block("))
    assert re.fullmatch(r"\{\s*fn\(context\);\s*\}", block), block
    with open(adapter) as f:
        text = f.read()
    body = _braced_block(text, text.index("void run_serially("))
    assert body.index("this_thread_runs_on(queue)") < body.index("dispatch_sync(")
    assert "dispatch_queue_set_specific" in text and "dispatch_get_specific" in text


def test_the_stream_is_synchronized_only_inside_its_queue():
    """MPSStream::synchronize does not enter the stream's queue (PyTorch calls
    it from blocks already on it): outside, it could end and commit another
    thread's encoder under it. Our one call of it runs inside run_serially."""
    adapter = os.path.join(ROOT, "csrc", "metal", "torch_mps_adapter.h")
    with open(adapter) as f:
        text = f.read()
    with open(MM) as f:
        mm = f.read()
    calls = [m.start() for path_text in (text, mm) for m in re.finditer(r"->synchronize\(", path_text)]
    assert len(calls) == 1 and "->synchronize(" not in mm, "one call of the stream's synchronize, in the adapter"
    body = _braced_block(text, text.index("inline void commit_and_wait("))
    assert re.search(r"run_serially\(serial_queue\(stream\),[^;]*->synchronize\(", body), body
    assert "commit_and_wait(" in mm, "the backend never waits for the GPU"


def test_a_deferred_mark_is_waited_for_on_the_stream_it_was_made_on():
    """Deferred error checks (error_checks.h) on Metal: the mark is a completed
    handler, added outside the stream's queue (PyTorch's addCompletedHandler
    dispatch_syncs onto it: inside, it would never return), and a wait
    commits the stream the mark was made on, not whichever is current now
    (2.15: one per thread, switched by torch.mps.stream), then waits for the
    handler itself, which Metal may run after the buffer's wait returns."""
    adapter = os.path.join(ROOT, "csrc", "metal", "torch_mps_adapter.h")
    with open(adapter) as f:
        text = f.read()
    with open(MM) as f:
        mm = f.read()
    helper = _braced_block(text, text.index("inline void set_when_completed("))
    assert "!this_thread_runs_on(serial_queue(stream))" in helper and "run_serially" not in helper, helper
    assert re.search(r"stream->addCompletedHandler\(\^\(id<MTLCommandBuffer>\)\s*\{\s*__atomic_store_n\(word, 1, "
                     r"__ATOMIC_RELEASE\);", helper), helper
    mark = _braced_block(mm, mm.index("const void* mark_when_done("))
    assert "set_when_completed(stream," in mark and "return stream;" in mark, mark
    wait = _braced_block(mm, mm.index("void wait_until_marked("))
    assert "current_stream()" not in wait and re.search(r"commit_and_wait\(static_cast<torch_mps::Stream\*>", wait), wait
    assert re.search(r"while \(__atomic_load_n\(done.host, __ATOMIC_ACQUIRE\) == 0\)", wait), wait


def test_require_metallib_fails_without_a_toolchain(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(macos_build, "metal_toolchain_available", lambda run=None: False)
    monkeypatch.setattr(macos_build, "default_cxx", lambda: CLANG)
    build_dir = os.path.relpath(str(tmp_path), ROOT)
    assert macos_build.main(["--build-dir", build_dir]) == 0
    assert macos_build.main(["--build-dir", build_dir, "--require-metallib"]) == 1
    assert "--require-metallib" in capsys.readouterr().err
