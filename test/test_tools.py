"""The build tools: the emulator prepass, the MSL checks, the registry loader."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import check_msl  # noqa: E402
import codegen  # noqa: E402
import msl_prepass  # noqa: E402

KERNEL = """
#include <metal_stdlib>
using namespace metal;
template <typename T>
kernel void scale(device T* out [[buffer(0)]], constant T& k [[buffer(1)]],
                  uint2 pos [[thread_position_in_grid]]) {
  out[pos.x] *= k;
}
template [[host_name("scale_float")]] [[kernel]] decltype(scale<float>) scale<float>;
"""


def test_prepass_reads_roles_and_host_names():
    result = msl_prepass.scan(KERNEL)
    assert result.kernels["scale"].roles == [
        "::mps_ops_emu::buffer_role<0>",
        "::mps_ops_emu::buffer_role<1>",
        "::mps_ops_emu::thread_position_in_grid_role",
    ]
    (inst,) = result.instantiations
    assert (inst.host_name, inst.base_name) == ("scale_float", "scale")
    generated = msl_prepass.generate(KERNEL, "test.metal")
    assert "host_name" not in generated
    assert 'kernel_entry{"scale_float", "test.metal"' in generated


def test_prepass_makes_threadgroup_arrays_shared_whatever_their_size_expression():
    """`threadgroup float x[A * B];` is storage shared by the group (a `*` in
    the dims once made the prepass take it for a pointer and leave each
    thread an array of its own); `threadgroup float* p;` stays a pointer."""
    body = KERNEL.replace("  out[pos.x] *= k;\n",
                          "  threadgroup float shared[4 * 8];\n  threadgroup float* view;\n  out[pos.x] *= k;\n")
    result = msl_prepass.scan(body)
    (edit,) = result.threadgroup_edits
    assert "threadgroup_variable<float[4 * 8]" in edit[2].replace("[4*8]", "[4 * 8]"), edit


def test_prepass_refuses_unattributed_kernel_parameters():
    bad = KERNEL.replace(" [[buffer(1)]]", "")
    with pytest.raises(msl_prepass.PrepassError, match="every parameter needs an attribute"):
        msl_prepass.scan(bad)


def test_prepass_refuses_what_the_emulator_cannot_run_yet():
    bad = KERNEL.replace("[[thread_position_in_grid]]", "[[stage_in]]")
    with pytest.raises(msl_prepass.PrepassError, match="not supported by the emulator"):
        msl_prepass.scan(bad)


def test_msl_lint_flags_what_metal_rejects(tmp_path):
    planted = tmp_path / "bad.metal"
    planted.write_text("// double in a comment is fine\n"
                       "inline float f(float x) { double y = x; return std::exp(y); }\n")
    problems = check_msl.lint(str(planted))
    assert any("double" in p for p in problems) and any("std::" in p for p in problems)
    assert all(":2:" in p for p in problems)


def test_repository_kernels_pass_the_msl_checks():
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "check_msl.py")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_registry_loads_and_names_existing_stub_files():
    entries = codegen.load_registry()
    assert len({e.name for e in entries}) == len(entries)
    for e in entries:
        if e.shape:  # a standard shape's shared stubs serve it
            assert e.file is None and len(e.kernels) == 1, e.name
        else:
            assert os.path.exists(os.path.join(ROOT, "csrc", "operations", f"{e.file}.mm"))


def test_host_stubs_contain_no_objective_c():
    """Objective-C++ lives only in csrc/metal/; stubs compile as C++ everywhere."""
    import glob

    for path in glob.glob(os.path.join(ROOT, "csrc", "operations", "*.mm")):
        text = open(path).read()
        for marker in ("#import", "@interface", "@implementation", "@autoreleasepool", "id<"):
            assert marker not in text, f"{path}: {marker}"


def test_msl_checks_flag_static_storage_textures_and_recursion(tmp_path):
    planted = tmp_path / "bad.metal"
    planted.write_text(
        "#include <metal_stdlib>\n"
        "inline float f(float x) { return x > 1 ? f(x - 1) : x; }\n"
        "inline float g(float x) { static float cache = 0; return cache + x; }\n"
        "struct r { static float identity() { return 0.0f; } };\n"
        "inline float h(texture2d<float> t) { return 0; }\n"
    )
    problems = check_msl.lint(str(planted))
    assert any(":3: static" in p for p in problems)
    assert not any(":4:" in p for p in problems), "a static member function is not storage"
    assert any(":5: textures" in p for p in problems)
    cxx = next(c for c in ("clang++-16", "clang++-17", "clang++-18", "clang++-15", "clang++")
               if subprocess.run(["which", c], capture_output=True).returncode == 0)
    assert any("f calls itself" in p for p in check_msl.recursion(str(planted), cxx))
