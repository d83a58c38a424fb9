"""nonzero_static (+ out=), a fill op (torch 2.9 to 2.11 lack it on MPS),
against the CPU: every dtype the CPU takes (complex too), sizes below, at
and past the count, fill values, 0-dim, empty and many-block inputs (the
scan's chunks), zeros that are -0.0 and nonzeros that are NaN or
subnormal, non-contiguous and expanded inputs, out= of every kind, the
CPU's errors, and an input past 2**31 elements (a GPU's memory)."""

from __future__ import annotations

import warnings

import pytest
import torch

import mps_ops
from helpers import errors_of_cpu_and_ours, in_layout, run_on_kernels
from mps_ops.testing import device, emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"nonzero_static"}

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.complex64]
KERNELS = ["nonzero_static_count", "nonzero_static_scan", "nonzero_static_write", "nonzero_static_fill"]


def _sparse(shape, dtype, density=0.3, seed=0):
    torch.manual_seed(seed)
    keep = torch.rand(shape) < density
    if dtype == torch.bool:
        return keep
    values = torch.randn(shape, dtype=torch.complex64) if dtype.is_complex else (torch.randn(shape) * 10)
    return (values * keep).to(dtype)


def _check(x, size, fill_value=-1, where=""):
    call = lambda t: torch.nonzero_static(t, size=size, fill_value=fill_value)  # noqa: E731
    expected = call(x)
    actual, dispatches = run_on_kernels(call, x)
    assert actual.dtype == torch.int64 and actual.shape == expected.shape, where
    assert torch.equal(actual, expected), f"{where}: rows {(actual != expected).any(1).nonzero()[:5].tolist()}"
    return dispatches


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("size", [0, 1, 17, 60, 500], ids=lambda s: f"size{s}")
def test_dtypes_and_sizes(dtype, size):
    """A (4, 5, 6) input with about 36 nonzeros: sizes below, near and far
    past the count."""
    dispatches = _check(_sparse((4, 5, 6), dtype), size, -1, f"{dtype} size {size}")
    assert [d.op for d in dispatches] == (KERNELS if size else [])


@pytest.mark.parametrize("fill_value", [-1, 0, 7, -2**63, 2**63 - 1], ids=str)
def test_fill_values(fill_value):
    _check(_sparse((9, 7), torch.float32), 40, fill_value, f"fill {fill_value}")


@pytest.mark.parametrize("shape", [(), (1,), (0,), (3, 0, 4), (1, 1, 1, 1, 1, 1), (2,) * 17], ids=str)
def test_shapes(shape):
    """0-dim (rows of no coordinates), empty (every row filled), many dims."""
    for density in (0.0, 0.5, 1.0):
        _check(_sparse(shape, torch.float32, density), 5, -3, f"{shape} density {density}")


@pytest.mark.parametrize("density", [0.0, 0.001, 0.5, 1.0], ids=str)
def test_many_blocks(density):
    """3 x 1,500,007 elements: about 1,100 blocks of 4,096, and a size
    that ends inside a block."""
    x = _sparse((3, 1_500_007), torch.bool, density)
    count = int(x.sum())
    for size in {0, 1, count // 2 + 1, count, count + 5}:
        _check(x, size, -1, f"density {density} size {size} of {count}")


def test_the_scan_takes_two_passes():
    """69,206,017 elements: 16,897 blocks of 4,096, past the 16,384 that one
    pass of the scan takes (1,024 threads of nonzero_static_scan_per_thread
    counts), so the second pass carries the first's total."""
    x = _sparse((69_206_017,), torch.bool, 0.001)
    count = int(x.sum())
    _check(x, count + 5, -1, f"size {count + 5} of {count}")


def test_special_values():
    """-0.0 is zero; NaN, infinities and subnormals are not (a GPU that
    flushes subnormals in a comparison would drop them)."""
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        tiny = torch.finfo(dtype).tiny
        x = torch.tensor([0.0, -0.0, float("nan"), float("-inf"), tiny / 4, -tiny / 4, 1.0], dtype=dtype)
        _check(x, 8, -1, str(dtype))
    z = torch.tensor([complex(0.0, -0.0), complex(-0.0, 0.0), complex(0.0, 1e-45), complex(float("nan"), 0.0)])
    _check(z, 5, -1, "complex")


@pytest.mark.parametrize("layout", ["transposed", "strided", "expanded", "conjugate"])
def test_input_layouts(layout):
    """Row-major order of the logical elements, whatever the strides."""
    if layout == "expanded":
        x = _sparse((1, 7), torch.float32).expand(5, 7)
    elif layout == "conjugate":
        x = _sparse((6, 5), torch.complex64).conj()
    else:
        x = in_layout(_sparse((6, 5, 4), torch.int32), layout)
    _check(x, 100, -1, layout)


def test_out_of_every_kind():
    """out= of the right shape, of another (resized, with the CPU's
    warning), non-contiguous, and empty."""
    x = _sparse((5, 6), torch.int64)
    expected = torch.nonzero_static(x, size=12)
    for label, make in {"right shape": lambda: torch.full((12, 2), 5), "transposed": lambda: torch.full((2, 12), 5).t(),
                        "empty": lambda: torch.empty(0, dtype=torch.long),
                        "other shape": lambda: torch.full((3, 3), 5)}.items():
        out = make()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            (actual, returned_out), _ = run_on_kernels(
                lambda t, o: (o, torch.nonzero_static(t, size=12, out=o) is o), x, out)
        assert torch.equal(actual, expected) and returned_out, label
        assert any("resized" in str(w.message) for w in caught) == (label == "other shape"), label


@pytest.mark.parametrize("case", ["uint16, no rows", "uint32, 0-dim", "uint64, empty", "empty of a 2**32 dim"])
def test_no_rows_or_coordinates_return_before_the_dtype_checks(case):
    """The CPU resizes out and returns before its dtype dispatch where out
    has no elements, and an empty input fills every row: no error for a
    dtype it lacks there, nor a division by a dim past 32 bits."""
    x, size = {"uint16, no rows": (torch.ones(3, 4, dtype=torch.uint16), 0),
               "uint32, 0-dim": (torch.tensor(5, dtype=torch.uint32), 3),
               "uint64, empty": (torch.ones(0, 4, dtype=torch.uint64), 0),
               "empty of a 2**32 dim": (torch.empty(0, 2**32), 4)}[case]
    call = lambda t: torch.nonzero_static(t, size=size, fill_value=-2)  # noqa: E731
    actual, _ = run_on_kernels(call, x)
    assert torch.equal(actual, call(x)), case


ERRORS = {
    "negative size": lambda x: torch.nonzero_static(x, size=-1),
    "out of another dtype": lambda x: torch.nonzero_static(x, size=3, out=torch.empty(0, dtype=torch.int32)),
    "uint16": lambda x: torch.nonzero_static(x.to(torch.uint16), size=3),
    "uint64": lambda x: torch.nonzero_static(x.to(torch.uint64), size=3),
}


@pytest.mark.parametrize("name", ERRORS.keys())
def test_errors_are_the_cpus(name):
    cpu, ours = errors_of_cpu_and_ours(ERRORS[name], _sparse((4, 5), torch.float32))
    assert str(cpu).split(" not implemented")[0] in str(ours)


def test_more_than_32_dims_raise_clearly():
    """The sizes ride in the kernels' params: 32 dims at most (the CPU
    takes more)."""
    with pytest.raises(RuntimeError, match="nonzero_static of a tensor of more than 32 dims"):
        run_on_kernels(lambda t: torch.nonzero_static(t, size=3), torch.ones([1] * 33))


def test_float64_is_refused_clearly():
    with pytest.raises(TypeError, match="nonzero_static"):
        run_on_kernels(lambda t: torch.nonzero_static(t, size=3), torch.ones(4, dtype=torch.float64))


@pytest.mark.skipif(mps_ops.backend == "emulator", reason="2**31 + 8 elements (2 GiB of bool): a GPU's memory")
def test_past_2_to_the_31_elements():
    """Nonzeros before and past element 2**31: the blocks' offsets and the
    elements' indices in 64 bits (the coordinates through 32-bit divisors,
    under 2**32 elements)."""
    n = 2**31 + 8
    x = torch.zeros(2, n // 2, dtype=torch.bool, device=device())
    positions = [3, 2**31 - 1, 2**31, n - 1]
    flat = x.view(-1)
    flat[positions] = True
    with emulate():
        actual = torch.nonzero_static(x, size=6, fill_value=-5).cpu()
    expected = [[p // (n // 2), p % (n // 2)] for p in positions] + [[-5, -5]] * 2
    assert actual.tolist() == expected
