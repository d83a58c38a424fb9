"""What only the emulator does, one small MSL kernel per feature: its
compile_shader (the MSL checks, errors with the line), checked mode, poison,
barrier misuse raised, reverse group order, its limits. Runs through
compile_shader, on CPU tensors. Metal's compute model itself, which every
backend runs, is test_compute_model.py's."""

from __future__ import annotations

import contextlib

import pytest
import torch

import mps_ops

pytestmark = pytest.mark.skipif(mps_ops.backend != "emulator", reason="emulator-only behaviour")

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def compile(body: str):
    return mps_ops.compile_shader(HEADER + body)


def test_compile_errors_raise_syntax_error_with_the_line():
    source = HEADER + "kernel void broken(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n  out[i] = undefined_name;\n}\n"
    with pytest.raises(SyntaxError) as info:
        mps_ops.compile_shader(source)
    assert info.value.lineno == 4
    assert "undefined_name" in str(info.value)


KERNEL_OF = "kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {{ {} }}\n"


@pytest.mark.parametrize("prelude,body,what,line", [
    ("", "double d = x[i]; x[i] = d;", "double", 3),
    ("float f(float v) { return v > 0 ? f(v - 1) : v; }\n", "x[i] = f(x[i]);", "f calls itself", 3),
    ("", "asm(\"nop\");", "inline assembly", 3),
    ("struct S { S() {} float v = 1; };\nS s;\n", "x[i] = s.v;", "namespace scope", 4),
    ("float scale = 2.0f;\n", "x[i] *= scale;", "namespace scope", 3),
])
def test_sources_apples_compiler_rejects_are_rejected(prelude, body, what, line):
    with pytest.raises(SyntaxError, match=what) as info:
        mps_ops.compile_shader(HEADER + prelude + KERNEL_OF.format(body))
    assert info.value.lineno == line


def test_constant_globals_are_accepted():
    lib = mps_ops.compile_shader(HEADER + "constant float scale = 2.0f;\n" + KERNEL_OF.format("x[i] *= scale;"))
    x = torch.ones(3)
    lib.k(x)
    assert torch.equal(x, torch.full((3,), 2.0))


@pytest.mark.parametrize("source", [None, b"kernel void k() {}", 3])
def test_source_that_is_not_a_str_raises_type_error(source):
    with pytest.raises(TypeError, match="expects Metal source as a str"):
        mps_ops.compile_shader(source)


def test_what_msl_forbids_fails_to_compile():
    with pytest.raises(SyntaxError, match="atomic_fetch_add exists for int, uint and float only"):
        compile("""
kernel void add64(device atomic_ulong* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  atomic_fetch_add_explicit(a, 1ul, memory_order_relaxed);
}
""")
    with pytest.raises(SyntaxError, match="no float min/max"):
        compile("""
kernel void fmax(device atomic_float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  atomic_fetch_max_explicit(a, 1.0f, memory_order_relaxed);
}
""")


def test_libraries_list_kernels_and_are_cached():
    src = HEADER + "kernel void one(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = 1; }\n"
    lib = mps_ops.compile_shader(src)
    assert dir(lib) == ["one"]
    assert mps_ops.compile_shader(src) is lib
    with pytest.raises(AttributeError):
        lib.two


# Checked mode and the errors the GPU would hide.

def test_checked_mode_catches_one_element_past_the_end():
    lib = compile("""
kernel void off_by_one(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i + 1] = 1.0f;
}
""")
    out = torch.zeros(16)
    with mps_ops.emulator.checked():
        with pytest.raises(IndexError, match=r"off_by_one.*buffer\(0\).*byte offset 64"):
            lib.off_by_one(out)
    assert bool((out == 0).all()), "a faulting kernel's writes are not copied back"


def test_checked_mode_catches_reads_before_the_start():
    lib = compile("""
kernel void before(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
  out[i] = in[int(i) - 2000];
}
""")
    with mps_ops.emulator.checked():
        with pytest.raises(IndexError, match=r"before.*buffer\(0\).*byte offset -8000"):
            lib.before(torch.zeros(16), torch.zeros(16))


def test_checked_mode_catches_writes_into_the_gap_before_a_buffer():
    lib = compile("""
kernel void underflow(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  if (i == 0) out[-1] = 1.0f;
}
""")
    with mps_ops.emulator.checked():
        with pytest.raises(IndexError, match=r"underflow.*buffer\(0\).*byte offset -4"):
            lib.underflow(torch.zeros(8))


def test_checked_mode_is_a_switch():
    lib = compile("""
kernel void touch(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = 2.0f;
}
""")
    out = torch.zeros(4)
    with mps_ops.emulator.checked(False):
        lib.touch(out)
    with mps_ops.emulator.checked():
        lib.touch(out)
    assert bool((out == 2).all())


def test_threadgroup_memory_starts_poisoned():
    lib = compile("""
kernel void uninitialised(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  threadgroup float tile[32];
  out[i] = tile[i % 32];
}
""")
    out = torch.zeros(64)
    lib.uninitialised(out, group_size=32)
    assert bool(out.isnan().all())


def test_returning_while_others_wait_at_a_barrier_raises():
    lib = compile("""
kernel void early_exit(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  if (i == 3) return;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[i] = 1.0f;
}
""")
    with pytest.raises(RuntimeError, match="early_exit.*returned while other threads"):
        lib.early_exit(torch.zeros(8), group_size=8)


def test_barriers_in_divergent_control_flow_raise():
    lib = compile("""
kernel void uneven(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  if (i % 2 == 0) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  } else {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  out[i] = 1.0f;
}
""")
    with pytest.raises(RuntimeError, match="uneven.*different threadgroup_barrier call sites"):
        lib.uneven(torch.zeros(8), group_size=8)


def test_reverse_group_order_exposes_order_assumptions():
    lib = compile("""
kernel void last_writer(device int* out [[buffer(0)]], uint g [[threadgroup_position_in_grid]]) {
  out[0] = int(g);
}
""")
    out = torch.zeros(1, dtype=torch.int32)
    lib.last_writer(out, threads=64, group_size=16)
    assert out.item() == 3
    with mps_ops.emulator.reverse_group_order():
        lib.last_writer(out, threads=64, group_size=16)
    assert out.item() == 0


def test_load_metallib_explains_that_the_emulator_cannot_run_gpu_code(tmp_path):
    with pytest.raises(NotImplementedError, match="compile_shader"):
        mps_ops.load_metallib(b"MTLB\x00\x00")
    path = tmp_path / "kernels.metallib"
    path.write_bytes(b"MTLB")
    with pytest.raises(NotImplementedError, match="emulator"):
        mps_ops.load_metallib(path)


def test_vectors_swizzles_packed_types_and_vector_math():
    lib = compile("""
kernel void vectors(device const float4* in [[buffer(0)]], device float* out [[buffer(1)]],
                    device packed_float3* packed [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  float4 v = in[i];
  float2 w = v.yx;                 // swizzle read
  v.xy = v.wz;                     // swizzle write
  v.zw += float2(10.0f, 20.0f);    // compound swizzle write
  float3 p = packed[i];            // packed -> aligned
  packed[i] = p * 2.0f;            // aligned -> packed
  device float* o = out + 8 * i;
  o[0] = v.x; o[1] = v.y; o[2] = v.z; o[3] = v.w;
  o[4] = w.x + w.y;
  o[5] = dot(v, float4(1.0f));
  o[6] = float(all(v > float4(-1000.0f))) + 2.0f * float(any(isnan(v)));
  o[7] = float(popcount(uint(i) + 7u)) + 100.0f * float(clz(uint(1)));
}
""")
    x = torch.randn(5, 4)
    out = torch.empty(5, 8)
    packed = torch.randn(5, 3)
    packed_in = packed.clone()
    lib.vectors(x, out, packed, threads=5)
    assert 4 * 4 == 16 and torch.equal(packed, packed_in * 2), "packed_float3 is 12 bytes, no padding"
    v = x.clone()
    v[:, 0], v[:, 1] = x[:, 3], x[:, 2]
    v[:, 2] += 10
    v[:, 3] += 20
    torch.testing.assert_close(out[:, :4], v)
    torch.testing.assert_close(out[:, 4], x[:, 0] + x[:, 1])
    torch.testing.assert_close(out[:, 5], v.sum(1))
    assert (out[:, 6] == 1).all()
    expected = torch.tensor([bin(i + 7).count("1") + 100 * 31 for i in range(5)], dtype=torch.float32)
    assert torch.equal(out[:, 7], expected)


# Regressions found in review.

def test_divergent_barriers_on_one_line_raise():
    lib = compile("""
kernel void one_line_barriers(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  if (i % 2 == 0) { threadgroup_barrier(mem_flags::mem_threadgroup); } else { threadgroup_barrier(mem_flags::mem_threadgroup); }
  out[i] = 1.0f;
}
""")
    with pytest.raises(RuntimeError, match="different threadgroup_barrier call sites"):
        lib.one_line_barriers(torch.zeros(8), group_size=8)


def test_checked_mode_from_two_threads_is_off_afterwards():
    """Two overlapping `with checked()` blocks in two threads, left in the
    order they were entered: the switch ends as it began."""
    import threading

    before = mps_ops._C.set_checked(False)
    mps_ops._C.set_checked(before)
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen_inside = []

    def first():
        with mps_ops.emulator.checked():
            first_in.set()
            second_in.wait()
        first_out.set()

    def second():
        first_in.wait()
        with mps_ops.emulator.checked():
            second_in.set()
            first_out.wait()
            seen_inside.append(mps_ops._C.set_checked(True))  # still on while this block is open

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen_inside == [True]
    assert mps_ops._C.set_checked(before) is before


def test_checked_mode_keeps_writes_through_two_views_of_one_storage():
    lib = compile("""
kernel void two(device float* a [[buffer(0)]], device float* b [[buffer(1)]],
                uint i [[thread_position_in_grid]]) {
  a[i] = 1.0f;
  b[i] = 2.0f;
}
""")
    x = torch.zeros(16)
    with mps_ops.emulator.checked():
        lib.two(x[8:], x[:8], threads=8)
    assert x.tolist() == [2.0] * 8 + [1.0] * 8


def test_grids_near_2_32_threads_are_not_lost_to_overflow():
    lib = compile("""
kernel void last(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  if (i == 4294967294u) out[0] = 7u;
}
""")
    out = torch.zeros(1, dtype=torch.int32)
    with mps_ops.emulator.checked(False):
        lib.last(out, threads=2**32 - 1, group_size=1024)
    assert out.item() == 7


def test_helpers_with_trailing_return_types_are_followed():
    lib = compile("""
inline auto lane_total(float x) -> float { return simd_sum(x); }
kernel void trailing(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
  out[i] = lane_total(in[i]);
}
""")
    x = torch.ones(32)
    out = torch.empty(32)
    lib.trailing(x, out, group_size=32)
    assert (out == 32).all()


def test_a_kernels_declared_group_limit_bounds_its_groups():
    """[[max_total_threads_per_threadgroup(64)]]: the group that fits the
    kernel by default is 64 threads, and a larger one is refused, as a Metal
    pipeline's maxTotalThreadsPerThreadgroup refuses it."""
    lib = compile("""
[[max_total_threads_per_threadgroup(64)]]
kernel void group_size_of(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]],
                          uint n [[threads_per_threadgroup]]) { out[i] = n; }
""")
    out = torch.zeros(512, dtype=torch.int32)
    lib.group_size_of(out)
    assert (out == 64).all(), out.unique()
    with pytest.raises(RuntimeError, match="between 1 and 64 threads"):
        lib.group_size_of(out, group_size=128)


def test_zero_group_size_is_refused_and_empty_grids_run_nothing():
    lib = compile("""
kernel void noop(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = 1.0f; }
""")
    with pytest.raises(ValueError, match="at least 1"):
        lib.noop(torch.zeros(4), group_size=[0, 4])
    empty = torch.zeros(0)
    lib.noop(empty)


def test_threadgroup_memory_over_32_kib_raises_before_the_kernel_runs():
    """Declared arrays (counted through helper functions, at their largest
    instantiation) plus threadgroup arguments are checked against Metal's
    32 KiB before the first threadgroup: nothing is written."""
    lib = compile("""
template <class T>
inline void fill_tile(threadgroup T* tile, uint i) { tile[i] = T(1); }
template <class T>
inline T staged(uint i) {
  threadgroup T tile[2048];  // 8 KiB of float
  fill_tile(tile, i);
  return tile[i];
}
kernel void too_big(device float* out [[buffer(0)]], threadgroup float* extra [[threadgroup(0)]],
                    uint i [[thread_position_in_grid]]) {
  out[i] = 2.0f;
  threadgroup float tile[4096];  // 16 KiB declared here
  tile[i] = staged<float>(i);
  extra[i] = tile[i];
  out[i] = extra[i];
}
""")
    out = torch.zeros(32)
    lib.too_big(out, group_size=32, threadgroup_memory=[4096])  # 24 KiB + 4 KiB: fine
    assert (out == 1).all()
    out.zero_()
    with pytest.raises(RuntimeError, match=r"too_big: threadgroup memory \(24576 bytes declared plus 12288 "
                                           r"bytes of threadgroup arguments\) exceeds Metal's 32 KiB"):
        lib.too_big(out, group_size=32, threadgroup_memory=[12288])
    assert (out == 0).all(), "the kernel ran before the limit was checked"


def test_a_long_kernel_releases_the_gil_and_stops_on_ctrl_c():
    """A kernel that runs for minutes: other Python threads keep running
    meanwhile, and SIGINT stops it between threadgroups as KeyboardInterrupt."""
    import os
    import signal
    import threading
    import time

    lib = compile("""
kernel void spin(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  float acc = 0.0f;
  for (int k = 0; k < 100000; ++k) acc += sin(float(k + int(i)));
  out[0] = acc;
}
""")
    ticks = []
    running = threading.Event()

    def tick():
        running.wait()
        for _ in range(5):
            ticks.append(time.monotonic())
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    ticker = threading.Thread(target=tick)
    ticker.start()
    started = time.monotonic()
    running.set()
    with pytest.raises(KeyboardInterrupt):
        lib.spin(torch.zeros(1), threads=1 << 30, group_size=32)
    ticker.join()
    assert len(ticks) == 5, "the other thread could not run while the kernel did"
    assert time.monotonic() - started < 30
    # Python's own handler is back: Ctrl-C outside a kernel interrupts as usual.
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)


@pytest.mark.parametrize("checked", [True, False], ids=["checked", "unchecked"])
@pytest.mark.parametrize("offset", [4, 5000, 10**5, 1 << 40, -1, -(1 << 36)])
def test_accesses_at_any_offset_raise_naming_the_buffer(offset, checked):
    """Every access through a device pointer is bounds-checked (bounded_ptr.h),
    so an offset that lands in other mapped memory (10**5 elements past the
    end) raises like one past the end, in either mode, before it happens."""
    lib = compile("""
kernel void poke(device float* x [[buffer(0)]], constant long& offset [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
  x[offset] = 1.0f;
}
""")
    x = torch.zeros(4)
    mode = mps_ops.emulator.checked() if checked else contextlib.nullcontext()
    message = f"poke: buffer\\(0\\) accessed at byte offset {4 * offset} \\(4 bytes\\), outside its 16 bound bytes"
    with mode, pytest.raises(IndexError, match=message):
        lib.poke(x, offset, threads=1)
    assert x.eq(0).all()


@pytest.mark.parametrize("checked", [True, False], ids=["checked", "unchecked"])
def test_pointers_derived_by_casts_and_addresses_keep_their_bounds(checked):
    """A C-style cast, reinterpret_cast, `&p[i]` stored in a pointer and an
    atomic through a cast pointer all stay bounded by the buffer they came from."""
    lib = compile("""
kernel void derive(device char* bytes [[buffer(0)]], constant int& which [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
  device atomic_uint* counters = (device atomic_uint*)bytes;
  device uint* words = reinterpret_cast<device uint*>(bytes);
  device uint* second = &words[1];
  if (which == 0) atomic_fetch_add_explicit(counters + 3, 1u, memory_order_relaxed);
  if (which == 1) words[3] = 7;
  if (which == 2) second[2] = 7;
  if (which == 3) atomic_fetch_add_explicit(counters + 2, 1u, memory_order_relaxed);
}
""")
    mode = mps_ops.emulator.checked() if checked else contextlib.nullcontext()
    buffer = torch.zeros(12, dtype=torch.uint8)
    with mode:
        for which in range(3):
            with pytest.raises(IndexError, match="derive: buffer\\(0\\) accessed at byte offset 12 "):
                lib.derive(buffer, which, threads=1)
        lib.derive(buffer, 3, threads=1)
    assert buffer.view(torch.int32).tolist() == [0, 0, 1]


def test_bounded_pointers_deduce_like_raw_pointers():
    """Template helpers taking `device const T*`, `threadgroup T*` or
    `constant T*` accept the kernel's pointers and declared arrays, with T
    deduced as C++ deduces it from raw pointers; a program-scope constant
    table passes to a `constant float*` parameter."""
    lib = compile("""
template <class T> inline T first(device const T* p) { return p[0]; }
template <class T> inline void put(threadgroup T* p, uint i, T v) { p[i] = v; }
template <class T> inline T twice(constant T* p) { return p[0] * T(2); }
inline float second(constant float* p) { return p[1]; }
constant float table[2] = {3.0f, 4.0f};
kernel void deduce(device float* out [[buffer(0)]], constant float* k [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
  threadgroup float staged[4];
  put(staged, i, first(out) + twice(k) + second(table));
  out[i + 1] = staged[i];
}
""")
    out = torch.tensor([1.0, 0.0])
    lib.deduce(out, torch.tensor([5.0]), threads=1)
    assert out.tolist() == [1.0, 15.0]


@pytest.mark.parametrize("checked", [True, False], ids=["checked", "unchecked"])
def test_threadgroup_arguments_are_bounded_each_by_its_own_length(checked):
    """[[threadgroup(N)]] arguments share one arena; running off the end of one
    into the next raises, naming the argument."""
    lib = compile("""
kernel void spill(device float* out [[buffer(0)]], threadgroup float* a [[threadgroup(0)]],
                  threadgroup float* b [[threadgroup(1)]], constant int& at [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
  b[0] = 1.0f;
  a[at] = 2.0f;
  out[0] = b[0];
}
""")
    mode = mps_ops.emulator.checked() if checked else contextlib.nullcontext()
    out = torch.zeros(1)
    with mode:
        lib.spill(out, 3, threads=1, threadgroup_memory=[16, 16])
        assert out.item() == 1.0
        with pytest.raises(IndexError, match=r"threadgroup\(0\)\]\] accessed at byte offset 16 "):
            lib.spill(out, 4, threads=1, threadgroup_memory=[16, 16])


def test_a_struct_argument_needs_its_whole_size_bound():
    """`constant S& p [[buffer(N)]]` with fewer bytes bound than S raises
    before the kernel reads it."""
    lib = compile("""
struct pair { float a; float b; };
kernel void take_pair(device float* out [[buffer(0)]], constant pair& p [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
  out[0] = p.a + p.b;
}
""")
    out = torch.zeros(1)
    with pytest.raises(IndexError, match="buffer\\(1\\) accessed at byte offset 0 \\(8 bytes\\), outside its 4"):
        lib.take_pair(out, torch.ones(1), threads=1)
    lib.take_pair(out, torch.ones(2), threads=1)
    assert out.item() == 2.0


def test_checked_mode_reports_a_private_array_larger_than_the_stack():
    lib = compile("""
kernel void hog(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  float big[4000000];
  for (int j = 0; j < 4000000; ++j) big[j] = float(j);
  x[i] = big[i * 7];
}
""")
    with mps_ops.emulator.checked(), pytest.raises(IndexError, match="hog: invalid access"):
        lib.hog(torch.zeros(4))


@pytest.mark.parametrize("index", [64, 70, -1])
def test_checked_mode_catches_threadgroup_arrays_out_of_bounds(index):
    """A declared threadgroup array is guarded like a buffer in checked mode."""
    lib = compile("""
kernel void spill(device float* out [[buffer(0)]], constant int& at [[buffer(1)]],
                  uint i [[thread_position_in_grid]], uint t [[thread_position_in_threadgroup]]) {
  threadgroup float tile[64];
  tile[t] = out[i];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (t == 0) tile[at] = 1.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[i] = tile[t];
}
""")
    x = torch.arange(64.0)
    with mps_ops.emulator.checked(), pytest.raises(IndexError, match="spill.*threadgroup memory"):
        lib.spill(x, index, threads=64, group_size=64)
    assert torch.equal(x, torch.arange(64.0)), "a faulting kernel's results are not copied back"
    with mps_ops.emulator.checked():
        lib.spill(x, 5, threads=64, group_size=64)
    assert x[5] == 1.0


def test_checked_mode_catches_threadgroup_arguments_past_their_end():
    lib = compile("""
kernel void past(device float* out [[buffer(0)]], threadgroup float* scratch [[threadgroup(0)]],
                 uint i [[thread_position_in_grid]]) {
  scratch[i + 16] = 1.0f;
  out[i] = 0.0f;
}
""")
    with mps_ops.emulator.checked(), pytest.raises(IndexError, match="past.*threadgroup memory"):
        lib.past(torch.zeros(16), threads=16, group_size=16, threadgroup_memory=[64])
