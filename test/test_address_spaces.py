"""tools/check_address_spaces.py: the repository's kernels pass, planted
address-space mistakes (which the C++ emulator accepts) fail.

Needs clang++-16 (C++ for OpenCL 2021 mode); without it these tests fail,
they are never skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "tools", "check_address_spaces.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))

import check_address_spaces  # noqa: E402

CLANG = "clang++-16"

PRELUDE = "#include <metal_stdlib>\nusing namespace metal;\n"

# Each planted kernel: (source after PRELUDE, 1-based line of the mistake in
# the whole file, a regex the diagnostic must match).
PLANTED = {
    "device_pointer_to_thread_parameter": (
        "inline void fill(thread float* p, float v) { *p = v; }\n"
        "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
        "  fill(out + i, 1.0f);\n"
        "}\n",
        5,
        r"cannot pass pointer to address space 'device' as a pointer to address space 'thread'",
    ),
    # A substitution failure with its reason is a real error (one without a
    # reason is a cascade of the temporary quirk: test_quirk_cascade...).
    "substitution_failure_with_a_reason": (
        "template <typename T> inline typename T::missing pick(T v) { return v; }\n"
        "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
        "  out[i] = pick(1.0f);\n"
        "}\n",
        5,
        r"no matching function for call to 'pick'",
    ),
    "write_through_constant_pointer": (
        "kernel void k(constant float* in [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
        "  in[i] = 2.0f;\n"
        "}\n",
        4,
        r"read-only variable is not assignable",
    ),
    "threadgroup_pointer_to_thread_pointer": (
        "kernel void k(threadgroup float* scratch [[threadgroup(0)]],\n"
        "              uint i [[thread_position_in_grid]]) {\n"
        "  thread float* p = scratch;\n"
        "  p[i] = 1.0f;\n"
        "}\n",
        5,
        r"cannot initialize a variable of type 'thread float \*thread' with an lvalue of type "
        r"'threadgroup float \*thread'",
    ),
    # Beyond the three required cases: what the generic-address-space-free
    # mode and the tool's own kernel-parameter rules add.
    "device_pointer_to_unqualified_parameter": (
        "inline void fill(float* p, float v) { *p = v; }\n"
        "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
        "  fill(out + i, 1.0f);\n"
        "}\n",
        5,
        r"cannot pass pointer to address space 'device' as a pointer to address space 'thread'",
    ),
    "device_element_to_thread_reference": (
        "inline void bump(thread float& x) { x += 1.0f; }\n"
        "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
        "  bump(out[i]);\n"
        "}\n",
        5,
        r"cannot bind reference in address space 'device' to object in address space 'thread'",
    ),
    "mistake_inside_an_instantiated_template": (
        "struct set_one {\n"
        "  template <typename T> void operator()(thread T* p) const { *p = T(1); }\n"
        "};\n"
        "template <typename F, typename T>\n"
        "kernel void k(device T* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
        "  F()(out + i);\n"
        "}\n"
        'template [[host_name("k_float")]] [[kernel]]\n'
        "decltype(k<set_one, float>) k<set_one, float>;\n",
        8,
        r"no matching function for call to object of type",
    ),
    "program_scope_variable_not_constant": (
        "float table[4] = {1.0f, 2.0f, 3.0f, 4.0f};\n"
        "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
        "  out[i] = table[i & 3];\n"
        "}\n",
        3,
        r"program scope variable must reside in constant address space",
    ),
    "cast_between_address_spaces": (
        "kernel void k(device char* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
        "  thread float* p = reinterpret_cast<thread float*>(out);\n"
        "  p[i] = 1.0f;\n"
        "}\n",
        4,
        r"reinterpret_cast from 'device char \*' to 'thread float \*' is not allowed",
    ),
    "unqualified_kernel_pointer_argument": (
        "kernel void k(float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
        "  out[i] = 1.0f;\n"
        "}\n",
        3,
        r"kernel k, parameter out: a pointer or reference argument of a kernel must be in the "
        r"device, constant or threadgroup address space",
    ),
    "atomic_in_thread_memory": (
        "kernel void k(device atomic_uint* counter [[buffer(0)]],\n"
        "              uint i [[thread_position_in_grid]]) {\n"
        "  atomic_uint mine;\n"
        "  atomic_fetch_add_explicit(&mine, 1u, memory_order_relaxed);\n"
        "}\n",
        6,
        r"cannot pass pointer to address space 'thread' as a pointer to address space 'device'",
    ),
    "device_method_on_a_temporary": (
        "struct acc { float v; float get() const device { return v; } };\n"
        "inline acc make(float v) { return acc{v}; }\n"
        "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
        "  out[i] = make(1.0f).get();\n"
        "}\n",
        6,
        r"object parameter of type 'const device acc' with an expression of type 'acc'",
    ),
    "unqualified_method_on_device_object": (
        "struct acc { float v; float get() const { return v; } };\n"
        "kernel void k(device float* out [[buffer(0)]], device acc* a [[buffer(1)]],\n"
        "              uint i [[thread_position_in_grid]]) {\n"
        "  out[i] = a[i].get();\n"
        "}\n",
        6,
        r"object parameter of type 'const thread acc' with an expression of type 'device acc'",
    ),
}

# Valid MSL that a naive OpenCL C++ translation would reject: must pass.
VALID = PRELUDE + """\
struct Params { uint n; float scale; };
struct Pair { float a, b; float sum() const { return a + b; } };
inline Pair make_pair(float a) { return Pair{a, 1.0f}; }
inline float twice(const thread float& x) { return 2.0f * x; }  // binds temporaries too
inline void store(device float* p, float v) { *p = v; }
inline float first(constant float* c) { return c[0]; }
kernel void k(device float* out [[buffer(0)]],
              constant Params& params [[buffer(1)]],
              device Params* saved [[buffer(2)]],
              constant float* table [[buffer(3)]],
              device atomic_uint* counter [[buffer(4)]],
              threadgroup float* scratch [[threadgroup(0)]],
              uint2 pos [[thread_position_in_grid]],
              uint t [[thread_index_in_threadgroup]]) {
  threadgroup float tile[32];
  threadgroup atomic_uint hits;
  Params p = params;            // struct copies out of and into other address spaces
  saved[pos.x] = p;
  tile[t & 31] = p.scale + first(table);
  scratch[t] = tile[t & 31];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float4 v = float4(scratch[t], 1.0f, float2(2.0f, p.scale));
  half h = half(v.y) + 1.0h;
  half2 hh = metal::vec<half, 2>(float2(v.x, v.y));  // a vector conversion in the template spelling
  bfloat b = bfloat(v.z);
  int e;
  float m = frexp(v.x, e) + make_pair(v.y).sum() + twice(v.z + 1.0f);
  ulong lanes = ulong(simd_ballot(m > 0.0f));
  atomic_fetch_add_explicit(counter, 1u, memory_order_relaxed);
  atomic_fetch_add_explicit(&hits, 1u, memory_order_relaxed);
  if (pos.x < p.n && !isnan(m)) {
    store(out + pos.x, twice(m) + float(e) + float(h) + float(hh.x) + float(b) + float(lanes) +
                       metal::fma(v.w, 2.0f, 1.0f) + simd_sum(v.w) +
                       metal::numeric_limits<float>::epsilon());
  }
}
"""


def _plant(tmp_path, name, body):
    path = tmp_path / f"{name}.metal"
    path.write_text(PRELUDE + body)
    return str(path)


def _run_tool(*args):
    return subprocess.run([sys.executable, TOOL, "--clang", CLANG, *args],
                          capture_output=True, text=True)


def test_clang16_is_installed():
    assert shutil.which(CLANG), f"{CLANG} is needed for the address-space check"


def test_repository_kernels_pass():
    proc = _run_tool()
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert re.search(r"check_address_spaces: [1-9]\d* \.metal files, 0 problems", proc.stdout)


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_mistake_fails(tmp_path, name):
    body, line, message = PLANTED[name]
    path = _plant(tmp_path, name, body)
    proc = _run_tool(path)
    assert proc.returncode == 1, proc.stderr + proc.stdout
    # The diagnostic points at the planted line of the .metal file.
    assert re.search(rf"^{re.escape(path)}:{line}(:\d+)?: error: ", proc.stderr, re.M), proc.stderr
    assert re.search(message, proc.stderr), proc.stderr


def test_valid_msl_patterns_pass(tmp_path):
    path = tmp_path / "valid.metal"
    path.write_text(VALID)
    assert check_address_spaces.check_file(str(path), CLANG) == []


def test_errors_in_included_headers_point_into_the_header(tmp_path):
    inc = tmp_path / "inc" / "planted"
    inc.mkdir(parents=True)
    (inc / "helpers.h").write_text(
        "#pragma once\n"
        "#include <metal_stdlib>\n"
        "template <typename T>\n"
        "inline void put(device T* out, constant T* in) {\n"
        "  in[0] = out[0];\n"
        "}\n")
    metal = tmp_path / "uses_header.metal"
    metal.write_text(PRELUDE + "#include <planted/helpers.h>\n"
                     "kernel void k(device float* out [[buffer(0)]],\n"
                     "              constant float* in [[buffer(1)]],\n"
                     "              uint i [[thread_position_in_grid]]) {\n"
                     "  put(out + i, in + i);\n"
                     "}\n")
    problems = check_address_spaces.check_file(str(metal), CLANG, [str(tmp_path / "inc")])
    text = "\n".join(problems)
    assert re.search(rf"{re.escape(str(inc / 'helpers.h'))}:5:\d+: error: ", text), text
    assert f"{metal}:7:" in text, text  # the instantiation note names the kernel's line



def test_quirk_cascade_is_a_reasonless_substitution_failure_only():
    """A specialization that failed on the temporary quirk fails again,
    without a reason, where a second caller uses it: that block is left out;
    one with a reason, or another candidate's note, is kept."""
    error = "a.h:9:13: error: no matching function for call to 'fold'"
    reasonless = "a.h:2:28: note: candidate template ignored: substitution failure [with R = r<half>, run = 8]"
    assert check_address_spaces._is_quirk_cascade([error, reasonless])
    assert not check_address_spaces._is_quirk_cascade([error, reasonless + ": no type named 'state'"])
    assert not check_address_spaces._is_quirk_cascade(
        [error, reasonless, "a.h:3:1: note: candidate function not viable: no known conversion"])
