"""The kernel table tools/macos_build.py embeds for the Metal backend: which
file defines each host name (the source fallback compiles only that file) and
which argument slots each kernel declares (dispatch refuses to leave one
unset). Checked against the kernel sources on any platform; no Metal.
"""

from __future__ import annotations

import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import macos_build  # noqa: E402
import msl_prepass  # noqa: E402

CLANG = "clang++-16"
FILES = macos_build.kernel_files()
INCLUDES = macos_build.include_dirs()


@pytest.fixture(scope="module")
def table():
    return macos_build.kernel_table(FILES, INCLUDES, CLANG)


@pytest.fixture(scope="module")
def preprocessed():
    """Each file as Apple's compiler's preprocessor sees it."""
    return [msl_prepass.preprocess(f, CLANG, INCLUDES, for_emulator=False) for f in FILES]


def host_names_in(source: str) -> list[str]:
    """The names in every [[host_name(...)]] attribute, read with a regex (not
    the prepass's scan): adjacent string literals joined."""
    names = []
    for match in re.finditer(r"\[\[\s*host_name\s*\(((?:\s*\"(?:[^\"\\]|\\.)*\")+)\s*\)\s*\]\]",
                             source):
        names.append("".join(re.findall(r"\"((?:[^\"\\]|\\.)*)\"", match.group(1))))
    return names


def test_every_host_name_maps_to_the_one_file_that_defines_it(table, preprocessed):
    defined = {}
    for index, source in enumerate(preprocessed):
        for name in host_names_in(source):
            assert name not in defined, f"{name} in two files"
            defined[name] = index
    assert defined, "no host names found"
    assert [r.host_name for r in table] == sorted(defined), "sorted, every name once"
    for record in table:
        assert record.source == defined[record.host_name], record.host_name


@pytest.mark.parametrize("host_name, file, buffers", [
    # unary_dense: out, in, n, params (no_params for ndtri)
    ("ndtri_dense_float_float", "special_unary.metal", 0b1111),
    # unary_strided: out, in, sizes, strides, ndim, params
    ("ndtri_strided_float_float", "special_unary.metal", 0b111111),
    # binary_dense: out, lhs, rhs, n, params
    ("add_relu_dense_float_float", "add_relu.metal", 0b11111),
    ("add_relu_dense_lhs_scalar_float_float", "add_relu.metal", 0b11111),
    # binary_strided: out, lhs, rhs, sizes, strides, ndim, params
    ("add_relu_strided_float_float", "add_relu.metal", 0b1111111),
    ("fused_adagrad_dense_float_float", "fused_adagrad.metal", 0xFF),
    ("logspace_dense_float_float", "logspace.metal", 0b11),
])
def test_slots_of_known_kernels(table, host_name, file, buffers):
    (record,) = [r for r in table if r.host_name == host_name]
    assert os.path.basename(FILES[record.source]) == file
    assert (record.buffer_slots, record.threadgroup_slots) == (buffers, 0)


def test_slots_match_each_kernels_signature(table, preprocessed):
    """Each record's slots are the [[buffer(N)]] / [[threadgroup(N)]] indices of
    the kernel it instantiates, read from the signature with a regex."""
    by_name = {r.host_name: r for r in table}
    for index, source in enumerate(preprocessed):
        signatures = {}
        for match in re.finditer(r"\bkernel\s+void\s+(\w+)\s*\(([^{;]*?)\)\s*\{", source):
            params = match.group(2)
            buffers = sum(1 << int(n) for n in re.findall(r"\[\[\s*buffer\s*\(\s*(\d+)\s*\)", params))
            groups = sum(1 << int(n) for n in re.findall(r"\[\[\s*threadgroup\s*\(\s*(\d+)\s*\)", params))
            signatures[match.group(1)] = (buffers, groups)
        for inst in msl_prepass.scan(source).instantiations:
            record = by_name[inst.host_name]
            assert (record.buffer_slots, record.threadgroup_slots) == signatures[inst.base_name], \
                inst.host_name


def test_table_agrees_with_what_the_emulator_registers(table):
    """The emulator's registrars (the same prepass, emulator preprocessing)
    name the same kernels, files and slots: what is tested on Linux is what
    the Metal backend checks."""
    registered = {}
    for path in FILES:
        origin = os.path.relpath(path, ROOT)
        cpp = msl_prepass.generate(msl_prepass.preprocess(path, CLANG, INCLUDES), origin)
        for name, file, buffers, groups in re.findall(
                r'kernel_entry\{"([^"]+)", "([^"]+)", .*?, (\d+)u, (\d+)u, (?:true|false), ', cpp):
            registered[name] = (file, int(buffers), int(groups))
    assert registered == {
        r.host_name: (os.path.relpath(FILES[r.source], ROOT), r.buffer_slots, r.threadgroup_slots)
        for r in table
    }


def test_table_covers_the_built_extensions_kernels(table):
    """Every kernel the built extension runs (emulator) is in the table."""
    mps_ops = pytest.importorskip("mps_ops", reason="needs the built extension")
    if mps_ops.backend != "emulator":
        pytest.skip("kernel_names() lists the emulator's kernels")
    assert set(mps_ops._C.kernel_names()) == {r.host_name for r in table}


def test_a_host_name_defined_twice_is_refused(tmp_path):
    kernel = ("#include <metal_stdlib>\n"
              "template <typename T>\n"
              "kernel void k(device T* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {}\n"
              "template [[host_name(\"twice\")]] [[kernel]] decltype(k<float>) k<float>;\n")
    files = []
    for name in ("a.metal", "b.metal"):
        (tmp_path / name).write_text(kernel)
        files.append(str(tmp_path / name))
    with pytest.raises(ValueError, match="twice is defined in both"):
        macos_build.kernel_table(files, INCLUDES, CLANG)
