"""The CUDA compile target (tools/cuda_build.py, the prepass's target "cuda",
csrc/cuda/include/mps_ops_cuda/): kernel files to PTX for sm_90, checked by
ptxas. Nothing here runs on a GPU.

Needs clang >= 19 and a CUDA toolkit (ptxas, libdevice): on Linux their
absence fails these tests with what to do (tools/bootstrap.sh installs
clang-19), it does not skip them.
"""

from __future__ import annotations

import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import cuda_build  # noqa: E402
import msl_prepass  # noqa: E402


EMULATOR_INCLUDE = os.path.join(ROOT, "csrc", "emulator", "include")
CUDA_INCLUDE = os.path.join(ROOT, "csrc", "cuda", "include")
# The stand-in headers each target has its own version of (the math is shared:
# mps_ops_msl/metal_math.h over each target's math_primitives.h).
TARGET_HEADERS = ("metal_simd.h", "metal_atomic.h")

KERNEL = """
#include <metal_stdlib>
using namespace metal;
template <typename T>
kernel void scale(device T* out [[buffer(0)]], constant T& k [[buffer(1)]],
                  uint2 pos [[thread_position_in_grid]]) {
  threadgroup T staged[32];
  staged[pos.x % 32] = out[pos.x] * k;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[pos.x] = staged[pos.x % 32];
}
template [[host_name("scale_float")]] [[kernel]] decltype(scale<float>) scale<float>;
"""

# Every SIMD-group function, atomic and math function of the CUDA headers,
# instantiated (templates are only compiled where used, and the repository's
# kernels use few of them): 32- and 64-bit scalars, half, a vector.
EVERY_FUNCTION = """
#include <metal_stdlib>
using namespace metal;

template <typename T>
inline T simd_everything(T x, T fill) {
  T r = simd_sum(x) + simd_product(x) + simd_min(x) + simd_max(x);
  r += simd_prefix_inclusive_sum(x) + simd_prefix_exclusive_sum(x);
  r += simd_prefix_inclusive_product(x) + simd_prefix_exclusive_product(x);
  r += simd_shuffle(x, ushort(1)) + simd_broadcast(x, ushort(0)) + simd_broadcast_first(x);
  r += simd_shuffle_up(x, ushort(1)) + simd_shuffle_down(x, ushort(1)) + simd_shuffle_xor(x, ushort(2));
  r += simd_shuffle_rotate_up(x, ushort(3)) + simd_shuffle_rotate_down(x, ushort(3));
  r += simd_shuffle_and_fill_up(x, fill, ushort(2)) + simd_shuffle_and_fill_down(x, fill, ushort(2));
  return r;
}

template <typename T>
kernel void every_simd_function(
    device T* out [[buffer(0)]],
    threadgroup T* scratch [[threadgroup(0)]],
    uint3 pos [[thread_position_in_grid]],
    uint3 in_group [[thread_position_in_threadgroup]],
    uint3 group [[threadgroup_position_in_grid]],
    uint3 grid [[threads_per_grid]],
    uint3 group_size [[threads_per_threadgroup]],
    uint3 groups [[threadgroups_per_grid]],
    uint index [[thread_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]],
    ushort simd_group [[simdgroup_index_in_threadgroup]],
    ushort simd_groups [[simdgroups_per_threadgroup]],
    uint width [[threads_per_simdgroup]],
    uint execution_width [[thread_execution_width]]) {
  threadgroup T tile[64];
  const uint i = pos.x + grid.x * (pos.y + grid.y * pos.z);
  T r = simd_everything(out[i], T(1));
  if (simd_is_first() && simd_any(r > T(0)) && !simd_all(r > T(0)) && simd_ballot(r > T(0)).any()) {
    r += T(in_group.y + group.z + group_size.x + groups.y + simd_group + simd_groups + width +
           execution_width + lane);
  }
  tile[index % 64] = r;
  scratch[index] = r;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);
  out[i] = tile[(index + 1) % 64] + scratch[0];
}

kernel void integer_simd_functions(device uint* out [[buffer(0)]], device long* wide [[buffer(1)]],
                                   uint i [[thread_position_in_grid]]) {
  out[i] = simd_and(out[i]) | simd_or(out[i]) ^ simd_xor(out[i]);
  wide[i] = simd_everything(wide[i], long(7));
}

kernel void vector_simd_functions(device float4* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = simd_shuffle_xor(out[i], ushort(1)) + simd_broadcast_first(out[i]) +
           simd_shuffle_and_fill_down(out[i], float4(0.0f), ushort(4));
}

kernel void every_atomic(device atomic_int* ints [[buffer(0)]], device atomic_uint* uints [[buffer(1)]],
                         device atomic_float* floats [[buffer(2)]], device atomic_bool* flags [[buffer(3)]],
                         device atomic_ulong* wide [[buffer(4)]], device int* out [[buffer(5)]],
                         uint i [[thread_position_in_grid]]) {
  int r = atomic_load_explicit(ints, memory_order_relaxed);
  atomic_store_explicit(ints + 1, r, memory_order_relaxed);
  r += atomic_exchange_explicit(ints + 2, 1, memory_order_relaxed);
  int expected = 0;
  r += atomic_compare_exchange_weak_explicit(ints + 3, &expected, 5, memory_order_relaxed,
                                             memory_order_relaxed) ? 1 : 0;
  r += atomic_fetch_add_explicit(ints, 1, memory_order_relaxed) + atomic_fetch_sub_explicit(ints, 1, memory_order_relaxed);
  r += atomic_fetch_and_explicit(ints, 3, memory_order_relaxed) + atomic_fetch_or_explicit(ints, 3, memory_order_relaxed);
  r += atomic_fetch_xor_explicit(ints, 3, memory_order_relaxed) + atomic_fetch_min_explicit(ints, 3, memory_order_relaxed);
  r += int(atomic_fetch_max_explicit(uints, 3u, memory_order_relaxed));
  r += int(atomic_fetch_add_explicit(floats, 1.5f, memory_order_relaxed));
  r += int(atomic_fetch_sub_explicit(floats, 0.5f, memory_order_relaxed));
  r += atomic_exchange_explicit(flags, true, memory_order_relaxed) ? 1 : 0;
  r += int(atomic_fetch_max_explicit(wide, ulong(i), memory_order_relaxed));
  out[i] = r;
}

template <typename T>
kernel void every_math_function(device T* out [[buffer(0)]], device int* exponents [[buffer(1)]],
                                uint i [[thread_position_in_grid]]) {
  const T x = out[i];
  T r = exp(x) + exp2(x) + log(x) + log2(x) + log10(x) + sqrt(x) + sin(x) + cos(x) + tan(x);
  r += asin(x) + acos(x) + atan(x) + sinh(x) + cosh(x) + tanh(x) + asinh(x) + acosh(x) + atanh(x);
  r += floor(x) + ceil(x) + trunc(x) + round(x) + rint(x) + fabs(x) + abs(x);
  r += pow(x, x) + powr(x, x) + atan2(x, x) + fmod(x, x) + fmin(x, x) + fmax(x, x);
  r += copysign(x, x) + fdim(x, x) + min(x, x) + max(x, x) + clamp(x, x, x) + select(x, x, true);
  r += precise::exp(x) + fast::log(x);
  int e = 0;
  r += T(float(frexp(float(x), e)) + ldexp(float(x), 2) + exp10(float(x)) + rsqrt(float(x)) +
         fract(float(x)) + sinpi(float(x)) + cospi(float(x)) + fma(float(x), 2.0f, 1.0f));
  exponents[i] = e + isnan(x) + isinf(x) + isfinite(x) + signbit(x);
  out[i] = r;
}

kernel void vector_math_functions(device float4* out [[buffer(0)]], device uint4* bits [[buffer(1)]],
                                  uint i [[thread_position_in_grid]]) {
  const float4 v = out[i];
  float4 r = exp(v) + rsqrt(v) + tanh(v) + pow(v, v) + fmin(v, v) + clamp(v, v, v) + fma(v, v, v);
  r += float4(dot(v, v) + length(v)) + normalize(v) + select(v, r, isnan(v));
  out[i] = all(r > v) || any(r < v) ? r : v;
  const uint x = bits[i].x;
  bits[i] = uint4(popcount(x) + clz(x) + ctz(x), reverse_bits(x) + rotate(x, 3u),
                  extract_bits(x, 2u, 5u) + mulhi(x, x), absdiff(x, 7u));
}

template [[host_name("every_simd_function_float")]] [[kernel]] decltype(every_simd_function<float>) every_simd_function<float>;
template [[host_name("every_simd_function_half")]] [[kernel]] decltype(every_simd_function<half>) every_simd_function<half>;
template [[host_name("every_simd_function_int")]] [[kernel]] decltype(every_simd_function<int>) every_simd_function<int>;
template [[host_name("every_math_function_float")]] [[kernel]] decltype(every_math_function<float>) every_math_function<float>;
template [[host_name("every_math_function_half")]] [[kernel]] decltype(every_math_function<half>) every_math_function<half>;
template [[host_name("every_math_function_bfloat")]] [[kernel]] decltype(every_math_function<bfloat>) every_math_function<bfloat>;
"""

EVERY_FUNCTION_ENTRIES = [
    "every_simd_function_float", "every_simd_function_half", "every_simd_function_int",
    "integer_simd_functions", "vector_simd_functions", "every_atomic",
    "every_math_function_float", "every_math_function_half", "every_math_function_bfloat",
    "vector_math_functions",
]


@pytest.fixture(scope="module")
def cuda_tools():
    """(clang, CUDA toolkit). Missing ones fail the test with what to do."""
    if sys.platform != "linux":
        pytest.skip("the CUDA target is built on Linux (tools/bootstrap.sh installs clang-19 there)")
    import mps_ops

    if mps_ops.backend == "cuda":
        # The GPU machine has no clang-19: the PTX this build runs was built
        # (and these tests passed) where it is, and travelled with the tree.
        pytest.skip("the PTX is built where clang-19 is, not on the GPU machine (cuda backend)")
    try:
        return cuda_build.find_clang(), cuda_build.find_cuda_toolkit()
    except cuda_build.ToolError as e:
        pytest.fail(str(e))


def test_cuda_target_writes_entries_and_shared_storage_without_bounds_checks():
    cu = msl_prepass.generate(KERNEL, "test.metal", target="cuda")
    assert ("MPS_OPS_CUDA_ENTRY void scale_float(const ::mps_ops_cuda::dispatch_params args) "
            "{ ::mps_ops_cuda::run<decltype(&scale<float>), &scale<float>, ::mps_ops_cuda::buffer_role<0>, "
            "::mps_ops_cuda::buffer_role<1>, ::mps_ops_cuda::thread_position_in_grid_role>(args); }") in cu
    assert "static __attribute__((__shared__)) T staged[32];" in cu
    assert "#include <mps_ops_cuda/launch.h>" in cu
    assert cu.count("#pragma clang force_cuda_host_device begin") == 1
    for emulator_only in ("bounded_ptr", "registrar", "threadgroup_variable", "host_name", "mps_ops_emu::"):
        assert emulator_only not in cu, emulator_only
    # The emulator's output is what it was.
    assert msl_prepass.generate(KERNEL, "test.metal") == msl_prepass.generate(KERNEL, "test.metal", "emulator")


def test_cuda_target_refuses_host_names_that_cannot_name_an_entry_point():
    bad = KERNEL.replace('host_name("scale_float")', 'host_name("scale-float")')
    with pytest.raises(msl_prepass.PrepassError, match="cannot name a CUDA entry point"):
        msl_prepass.generate(bad, "test.metal", target="cuda")
    with pytest.raises(ValueError, match="unknown prepass target"):
        msl_prepass.generate(KERNEL, "test.metal", target="metal")


def test_a_declared_group_limit_bounds_the_cuda_entry_and_the_emulator_entry():
    """[[max_total_threads_per_threadgroup(N)]] before a (template) kernel:
    its CUDA entry is launch-bounded to N (so the compiler keeps registers
    for groups of N), the emulator's entry records N, and C++ sees no such
    attribute."""
    bounded = KERNEL.replace("template <typename T>\nkernel void scale(",
                             "template <typename T>\n[[max_total_threads_per_threadgroup(256)]] kernel void scale(")
    assert bounded != KERNEL
    cu = msl_prepass.generate(bounded, "test.metal", target="cuda")
    assert "MPS_OPS_CUDA_ENTRY_WITHIN(256) void scale_float(" in cu
    emulator = msl_prepass.generate(bounded, "test.metal")
    assert "256u});" in emulator
    for text in (cu, emulator):
        assert "max_total_threads_per_threadgroup" not in text
    # Undeclared: Metal's limit (0 in the emulator's entry) and the plain entry.
    assert "MPS_OPS_CUDA_ENTRY void scale_float(" in msl_prepass.generate(KERNEL, "test.metal", target="cuda")
    assert "0u});" in msl_prepass.generate(KERNEL, "test.metal")


@pytest.mark.parametrize("limit", ["100", "2048", "n"])
def test_a_declared_group_limit_must_be_whole_simd_groups_within_metals(limit):
    bounded = KERNEL.replace("template <typename T>\nkernel void scale(",
                             f"template <typename T>\n[[max_total_threads_per_threadgroup({limit})]] kernel void scale(")
    with pytest.raises(msl_prepass.PrepassError, match="max_total_threads_per_threadgroup"):
        msl_prepass.generate(bounded, "test.metal", target="cuda")


def _defined_names(path: str, macro_prefix: str) -> set[str]:
    """Functions a stand-in header defines: by macro (`PREFIX_SIMD_SUM(simd_sum, ...)`)
    or directly (`T name(`, `inline R name(`)."""
    text = open(path).read()
    names = set(re.findall(rf"\b{macro_prefix}_\w+\((\w+),", text))
    names |= set(re.findall(r"^(?:inline\s+)?[\w:]+\s+(\w+)\s*\(", text, re.MULTILINE))
    return {n for n in names if not n.startswith("operator")}


@pytest.mark.parametrize("header", TARGET_HEADERS)
def test_cuda_headers_offer_what_the_emulators_offer(header):
    """A kernel that compiles for the emulator finds the same metal:: functions
    on the CUDA target (the headers each target has of its own)."""
    emulator = _defined_names(os.path.join(EMULATOR_INCLUDE, "mps_ops_emulator", header), "MPS_OPS_EMU")
    cuda = _defined_names(os.path.join(CUDA_INCLUDE, "mps_ops_cuda", header), "MPS_OPS_CUDA")
    # The emulator's fiber machinery, not MSL.
    internal = {"in_fiber", "block_at_collective", "poison", "lane_value", "set_result", "collect",
                "resolve_reduce", "resolve_scan", "resolve_shuffle", "resolve_nothing", "resolve_first",
                "resolve_ballot", "resolve_is_first"}
    assert len(emulator - internal) > 10
    assert sorted(emulator - internal - cuda) == []


def test_every_msl_function_compiles_to_ptx(cuda_tools, tmp_path):
    clang, toolkit = cuda_tools
    metal = tmp_path / "every_function.metal"
    metal.write_text(EVERY_FUNCTION)
    result = cuda_build.build_file(str(metal), str(tmp_path), clang, toolkit)
    assert result.ok, result.error or result.missing
    assert sorted(result.entries) == sorted(EVERY_FUNCTION_ENTRIES)
    ptx = open(result.ptx).read()
    for instruction in ("shfl.sync.idx", "shfl.sync.up", "shfl.sync.down", "shfl.sync.bfly",
                        "vote.sync.ballot", "vote.sync.all", "vote.sync.any", "activemask", "bar.sync",
                        "bar.warp.sync", "atom.global.add.f32", "atom.global.cas", "atom.global.exch",
                        "atom.global.max.u64"):
        assert instruction in ptx, instruction
    # Every device atomic on a global address: a generic one cannot become a
    # reduction and comes with a shared-memory spin loop in SASS
    # (metal_atomic.h says why the accesses are not volatile).
    assert not re.search(r"\batom\.(add|sub|and|or|xor|min|max|cas|exch)\b", ptx)
    assert ".func" not in ptx.replace(".extern .func", ""), "every kernel inlined into its entry (launch.h)"
    assert ".extern .func" not in ptx, "libdevice math is linked in, not left to resolve"


def test_cuda_build_compiles_kernel_files_and_checks_host_names(cuda_tools, tmp_path, capsys):
    files = [os.path.join(ROOT, "csrc", "kernels", f) for f in ("embedding_renorm.metal", "sum.metal")]
    assert cuda_build.main([*files, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2/2 files" in out and "ptxas checked" in out
    listed = {line.split()[0]: line.split()[1:] for line in open(tmp_path / "kernels.txt")}
    # host name -> file, [[buffer(N)]] mask, [[threadgroup(N)]] mask (the
    # CUDA backend's declared slots, as the emulator's registrars carry them).
    assert listed["sum_reduce_float_float"] == ["sum.ptx", "0x1f", "0x0"]
    assert listed["embedding_renorm_reduce_half_half"][0] == "embedding_renorm.ptx"


def test_cuda_build_fails_on_a_kernel_clang_rejects(cuda_tools, tmp_path, capsys):
    bad = tmp_path / "bad.metal"
    bad.write_text(KERNEL.replace("out[pos.x] * k", "out[pos.x] * undefined_name"))
    assert cuda_build.main([str(bad), "--out", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "undefined_name" in out and "0/1 files" in out


def test_rebuilding_some_files_keeps_the_other_files_kernels(tmp_path):
    """cuda_build.py with files named replaces their entries in kernels.txt
    and keeps every other file's (the whole list was once rewritten with the
    named files' entries only, and a GPU run carrying it missed the rest)."""
    def result(stem, names):
        return cuda_build.FileResult(metal=f"{stem}.metal", ptx=str(tmp_path / f"{stem}.ptx"), entries=names,
                                     slots={n: (1, 0) for n in names})

    cuda_build.write_kernel_list([result("a", ["a_old"]), result("b", ["b_one"])], str(tmp_path))
    cuda_build.write_kernel_list([result("a", ["a_new"])], str(tmp_path), keep_other_files=True)
    names = [line.split()[0] for line in (tmp_path / "kernels.txt").read_text().splitlines()]
    assert names == ["a_new", "b_one"]
    cuda_build.write_kernel_list([result("a", ["a_new"])], str(tmp_path))
    assert (tmp_path / "kernels.txt").read_text().split()[0] == "a_new"
    assert "b_one" not in (tmp_path / "kernels.txt").read_text()


def test_missing_clang_names_bootstrap(monkeypatch):
    monkeypatch.setenv("CUDA_CLANG", "clang++-does-not-exist")
    with pytest.raises(cuda_build.ToolError, match="tools/bootstrap.sh"):
        cuda_build.find_clang()


def test_compile_shader_sources_are_built_ahead_under_their_key(cuda_tools, tmp_path):
    """compile_shader on the CUDA backend finds a test kernel source by the
    hash of its text: shaders/<key>.ptx and its list, every kernel of the
    source an entry, the PTX named relative to the PTX directory."""
    clang, toolkit = cuda_tools
    results = cuda_build.build_shaders(str(tmp_path), clang, toolkit, 1)
    assert results and all(r.ok for r in results), [r.error for r in results]
    for result in results:
        with open(result.metal) as f:
            key = msl_prepass.shader_key(f.read())
        listed = [line.split() for line in open(tmp_path / "shaders" / f"{key}.txt")]
        assert sorted(entry[0] for entry in listed) == sorted(result.entries) and listed
        assert {entry[1] for entry in listed} == {f"shaders/{key}.ptx"}
