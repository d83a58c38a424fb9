"""_softmax and _log_softmax (override ops) against the CPU: every dim of a
3-D tensor, 1-D and 0-dim tensors, empty ones, rows longer than a SIMD
group's share and than a threadgroup, transposed, strided and expanded
inputs, rows of -inf, +inf and NaN, values far from 0, half and bfloat16
(at least as close to float64 as the CPU), and the out= forms. OpInfo
samples and gradients: test_opinfo.py and test_overrides.py."""

from __future__ import annotations

import mps_ops
import pytest
import torch

from helpers import assert_at_least_as_accurate, assert_matches, in_layout, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_softmax", "_log_softmax"}

OPS = {"softmax": torch.ops.aten._softmax, "log_softmax": torch.ops.aten._log_softmax}


def _check_values(kind, x, dim, where):
    fn = lambda t: OPS[kind](t, dim, False)  # noqa: E731
    expected = fn(x)
    actual, dispatches = run_on_kernels(fn, x)
    try:
        assert_matches(actual, expected, where)
    except AssertionError:
        if x.dtype == torch.float32:
            raise
        assert_at_least_as_accurate(actual, expected, fn(x.double()), where)
    assert dispatches or expected.numel() == 0, where
    assert all(d.op in (kind, kind + "_pairs") for d in dispatches), [d.kernel for d in dispatches]


def _check(kind, shape, dim, dtype=torch.float32, layout="contiguous", scale=3.0):
    torch.manual_seed(0)
    x = in_layout((torch.randn(shape) * scale).to(dtype), layout)
    _check_values(kind, x, dim, f"{kind} {tuple(shape)} dim {dim} {dtype} {layout} scale {scale}")


@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("shape, dim", [((4, 5, 6), 0), ((4, 5, 6), 1), ((4, 5, 6), 2), ((4, 5, 6), -1),
                                        ((7,), 0), ((), 0), ((), -1), ((0, 5), 1), ((5, 0), 1), ((3, 0), 0)])
def test_every_dim_and_rank(kind, shape, dim):
    _check(kind, shape, dim)


@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("shape, dim", [((3, 40), 1), ((5, 1000), 1), ((2, 5000), -1), ((3000, 4), 0),
                                        ((1, 40000), 1), ((70, 1024), 1), ((5, 1025), 1), ((3, 2048), 1),
                                        ((3, 2049), 1), ((2, 9000), 1), ((1, 32768), 1), ((1, 32769), 1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_long_and_short_rows(kind, shape, dim, dtype):
    """Each side of each bound of the rows held 32 per thread: up to 1024
    elements a SIMD group per row (shuffle merges), up to 8192 in groups of
    256 and up to 32768 in groups of 1024 (merges through threadgroup
    memory); longer rows read twice."""
    _check(kind, shape, dim, dtype=dtype)


@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("layout", ["transposed", "strided", "expanded"])
@pytest.mark.parametrize("dim", [0, -1])
def test_non_contiguous_input(kind, layout, dim):
    _check(kind, (6, 7, 9), dim, layout=layout)


@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("scale", [1e-30, 80.0, 1e30])
def test_values_far_from_zero(kind, scale):
    """exp(x) alone would overflow at 89: the max comes first, as on the CPU."""
    _check(kind, (6, 300), 1, scale=scale)


@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("row", [
    [-float("inf")] * 3,  # all -inf: NaN, as the CPU (exp(-inf - -inf))
    [-float("inf"), 1.0, 2.0],  # some -inf: 0 (softmax) and -inf (log_softmax) there
    [float("inf"), 1.0, 2.0],  # +inf: NaN throughout
    [float("inf"), float("inf"), -float("inf")],
    [float("nan"), 1.0, 2.0],  # NaN: NaN throughout
    [3.0, 3.0, 3.0],
], ids=["all_neg_inf", "some_neg_inf", "pos_inf", "infs", "nan", "equal"])
@pytest.mark.parametrize("length, dtype", [(3, torch.float32), (300, torch.float32), (1500, torch.float32),
                                           (9000, torch.float32), (40000, torch.float32), (300, torch.float16),
                                           (40000, torch.float16)],
                         ids=str)
def test_infinities_and_nan_as_the_cpu(kind, row, length, dtype):
    """The special value at each position of a row, so that it meets the
    other elements in every thread and merge order: rows held in registers
    within a SIMD group (3, 300), across SIMD groups (1500, 9000), rows read
    twice (40000: the online pair's rescaling)."""
    for position in range(0, length, max(1, length // 7)):
        x = torch.randn(4, length)
        x[1] = -float("inf")
        specials = torch.tensor(row).repeat(length // len(row) + 1)[:length]
        x[2] = specials.roll(position)
        x[3, position] = row[0]
        _check_values(kind, x.to(dtype), 1, f"{kind} {row} at {position} of {length} {dtype}")


@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_rows_sharing_a_group_with_threads_past_the_last_row(kind, dtype):
    """3 rows of 3000: the last group holds a row and threads past the last
    row, which must take the same branch (both merge through barriers)."""
    _check(kind, (3, 3000), 1, dtype=dtype)


@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision(kind, dtype):
    _check(kind, (8, 300), 1, dtype=dtype)
    _check(kind, (8, 30, 5), 1, dtype=dtype)


def _offset_rows(shape, dtype, offset):
    """Contiguous rows that start `offset` elements into their storage."""
    torch.manual_seed(0)
    n = torch.Size(shape).numel()
    return (torch.randn(n + offset) * 3).to(dtype)[offset:].view(shape)


@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape, offset, dim, paired", [
    ((5, 1000), 0, 1, True),  # 500 pairs per row: the last lanes pad
    ((3, 5000), 0, 1, True),  # several SIMD groups per row
    ((2, 20000), 0, 1, True),  # groups of 1024
    ((1, 40000), 0, 1, True),  # longer than a group holds: read twice
    ((2, 2), 0, 1, True),
    ((5, 999), 0, 1, False),  # odd rows: a row's pairs would straddle rows
    ((5, 1000), 1, 1, False),  # rows start between pairs
    ((1000, 5), 0, 0, False),  # the reduced dim is not contiguous
], ids=["padded", "simd_groups", "groups_of_1024", "read_twice", "tiny", "odd", "offset", "middle_dim"])
def test_rows_in_pairs_where_they_allow_it(kind, dtype, shape, offset, dim, paired):
    """The paired kernels take half and bfloat16 rows that are contiguous, of
    an even length and start on a 4-byte word; the others take the rest.
    Both match the CPU."""
    x = _offset_rows(shape, dtype, offset)
    fn = lambda t: OPS[kind](t, dim, False)  # noqa: E731
    actual, dispatches = run_on_kernels(fn, x)
    kernels = {d.op for d in dispatches}
    assert kernels == ({kind + "_pairs"} if paired and dtype != torch.float32 else {kind}), kernels
    where = f"{kind} {shape} offset {offset} dim {dim} {dtype}"
    expected = fn(x)
    try:
        assert_matches(actual, expected, where)
    except AssertionError:
        if dtype == torch.float32:
            raise
        assert_at_least_as_accurate(actual, expected, fn(x.double()), where)


@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("offset, paired", [(0, True), (1, False)], ids=["aligned", "offset"])
def test_out_form_pairs_only_into_an_aligned_out(kind, offset, paired):
    """A contiguous out= that starts between words takes the single kernel."""
    x = _offset_rows((3, 100), torch.float16, 0)
    expected = OPS[kind](x, 1, False)
    fn = lambda t, o: OPS[kind].out(t, 1, False, out=o[offset:].view(3, 100))  # noqa: E731
    written, dispatches = run_on_kernels(fn, x, torch.zeros(300 + offset, dtype=torch.float16))
    assert {d.op for d in dispatches} == ({kind + "_pairs"} if paired else {kind})
    assert_matches(written, expected, f"{kind} out= at offset {offset}")


@pytest.mark.skipif(mps_ops.backend != "emulator", reason="the pipeline thread limit is the emulator's to set")
@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("limit", [640, 768, 896])
@pytest.mark.parametrize("shape", [(3, 10000), (2, 30000), (5, 20)], ids=str)
def test_pipelines_that_allow_fewer_threads(kind, limit, shape):
    """An Apple GPU pipeline may allow fewer than 1024 threads per group, not
    a power of two (its registers decide). Rows of 10000 take 512 threads:
    a group of 768 would have held one row and half of the next, and written
    that half wrong (last, where the groups run last to first)."""
    with mps_ops.emulator.pipeline_thread_limit(limit), mps_ops.emulator.reverse_group_order():
        _check(kind, shape, 1, dtype=torch.float16)
        _check(kind, shape, 1)


@pytest.mark.parametrize("kind", OPS)
def test_out_form_writes_into_a_non_contiguous_out(kind):
    torch.manual_seed(0)
    x = torch.randn(4, 6)
    expected = OPS[kind](x, 1, False)
    target = torch.zeros(6, 4).t()
    fn = lambda t, o: (OPS[kind].out(t, 1, False, out=o), o)  # noqa: E731
    (returned, written), dispatches = run_on_kernels(fn, x, target)
    assert_matches(written, expected, f"{kind} out=")
    assert_matches(returned, expected, f"{kind} out= returned")
    assert dispatches


@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("call", [
    lambda op, x: op(x, 2, False),  # dim out of range: IndexError
    lambda op, x: op(x.long(), 1, False),  # integers: NotImplementedError
    lambda op, x: op(x.half(), 1, True),  # half to float: only CUDA converts
    lambda op, x: op(x, 1, True),  # half_to_float on a float input
    lambda op, x: op.out(x, 1, False, out=torch.empty(3, 4, dtype=torch.half)),  # out of another dtype
    lambda op, x: op.out(x, 5, False, out=torch.empty(3, 4, dtype=torch.half)),  # the dim comes first
], ids=["dim", "integers", "half_to_float", "half_to_float_on_float", "out_dtype", "dim_before_out_dtype"])
def test_errors_are_the_cpus(kind, call):
    x = torch.randn(3, 4)
    with pytest.raises(Exception) as cpu_error:
        call(OPS[kind], x)
    with pytest.raises(Exception) as our_error:
        run_on_kernels(lambda t: call(OPS[kind], t), x)
    assert type(our_error.value) is type(cpu_error.value), (our_error.value, cpu_error.value)
