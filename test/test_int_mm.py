"""_int_mm (a fill for torch 2.9 to 2.14: int8 dynamic quantization's
matrix product raised on a Mac) against the CPU: int8 and uint8 self, sizes
on and off the kernel's 64 x 64 tiles and its 32-deep inner steps, sums that
wrap past int32 as the CPU's, layouts, out=, empty shapes, the CPU's errors
in its order, and more than 2**31 elements (a GPU's memory)."""

from __future__ import annotations

import pytest
import torch

import mps_ops
from helpers import TORCH_RELEASE, errors_of_cpu_and_ours, run_on_kernels
from mps_ops.testing import device, emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_int_mm"}

INT_MM = torch._int_mm
# The CPU's kernel takes a uint8 self from torch 2.12 on (before, it raises:
# test_errors_are_the_cpus).
SELF_DTYPES = [torch.int8] + ([torch.uint8] if TORCH_RELEASE >= (2, 12) else [])


def _operands(dtype, rows, inner, columns):
    info = torch.iinfo(dtype)
    return (torch.randint(info.min, info.max + 1, (rows, inner), dtype=dtype),
            torch.randint(-128, 128, (inner, columns), dtype=torch.int8))


def _exact(a, b):
    """a @ b in int64, wrapped to int32: what the CPU's _int_mm computes
    where it reads its inputs right."""
    return ((a.long() @ b.long() + 2**31) % 2**32 - 2**31).int()


def _check(fn, *args, expected=None):
    expected = fn(*args) if expected is None else expected
    actual, dispatches = run_on_kernels(fn, *args)
    assert [d.op for d in dispatches] == ["int_mm"]
    assert actual.dtype == torch.int32 and actual.shape == expected.shape and actual.is_contiguous()
    assert torch.equal(actual, expected)
    return actual


@pytest.mark.parametrize("dtype", SELF_DTYPES, ids=str)
@pytest.mark.parametrize("sizes", [(5, 8, 3), (1, 1, 1), (64, 32, 64), (65, 33, 129), (130, 100, 140),
                                   (3, 1000, 2), (200, 7, 1)], ids=str)
def test_matches_the_cpu(dtype, sizes):
    """Tiles whole, cut at every edge, several along each dim, and an inner
    dim of many steps or of part of one."""
    torch.manual_seed(0)
    _check(INT_MM, *_operands(dtype, *sizes))


@pytest.mark.parametrize("dtype,a,b", [(d, a, b) for d, a, b in [(torch.uint8, 255, -128), (torch.uint8, 255, 127),
                                                                   (torch.int8, -128, -128), (torch.int8, 127, -128)]
                                       if d in SELF_DTYPES], ids=str)
def test_sums_wrap_past_int32_as_the_cpus(dtype, a, b):
    """140,000 products of 2**14 or more: the sums leave int32's range and wrap
    modulo 2**32, as the CPU's int32 sums do (one more row of other values
    keeps the test from passing on a constant)."""
    inner = 140_000
    self = torch.full((2, inner), a, dtype=dtype)
    self[1] = torch.arange(inner).remainder(7).to(dtype)
    mat2 = torch.full((inner, 2), b, dtype=torch.int8)
    out = _check(INT_MM, self, mat2)
    assert out[0, 0] == (a * b * inner + 2**31) % 2**32 - 2**31
    assert torch.equal(out, _exact(self, mat2))


LAYOUTS = {
    "transposed self": lambda a, b: (a.t().contiguous().t(), b),
    "transposed mat2": lambda a, b: (a, b.t().contiguous().t()),
    "sliced": lambda a, b: (torch.cat([a, a], 1)[:, ::2], b[:, :]),
    "offset": lambda a, b: (torch.cat([a[:1], a])[1:], torch.cat([b[:1], b])[1:]),
    "expanded mat2": lambda a, b: (a, b[:1].expand_as(b)),
}


@pytest.mark.parametrize("layout", LAYOUTS.keys())
def test_layouts(layout):
    """Against the exact product: the CPU's _int_mm (torch 2.13) returns
    garbage for a mat2 expanded along its rows (stride 0), and differs from
    call to call there."""
    a, b = _operands(torch.int8, 37, 45, 70)
    a, b = LAYOUTS[layout](a, b)
    _check(INT_MM, a, b, expected=_exact(a, b))


def test_out_is_written_in_place():
    a, b = _operands(torch.int8, 37, 45, 70)
    out = torch.full((37, 70), 7, dtype=torch.int32)
    actual, _ = run_on_kernels(lambda x, y, o: INT_MM(x, y, out=o), a, b, out)
    assert torch.equal(actual, INT_MM(a, b))


@pytest.mark.parametrize("sizes", [(0, 8, 3), (5, 8, 0), (0, 0, 0)], ids=str)
def test_empty_results(sizes):
    a, b = _operands(torch.int8, *sizes)
    expected = INT_MM(a, b)
    actual, dispatches = run_on_kernels(INT_MM, a, b)
    assert dispatches == [] and actual.shape == expected.shape and actual.dtype == torch.int32


def test_an_empty_inner_dim_gives_zeros():
    _check(INT_MM, *_operands(torch.int8, 5, 0, 3))


I8, I32 = torch.int8, torch.int32
ERRORS = {
    "self 1-D": lambda: INT_MM(torch.ones(5, dtype=torch.int32), torch.ones(8, 3, dtype=I8)),
    "self 3-D": lambda: INT_MM(torch.ones(2, 5, 8, dtype=I8), torch.ones(8, 3, dtype=I8)),
    "self 0-dim": lambda: INT_MM(torch.tensor(1, dtype=I8), torch.ones(8, 3, dtype=I8)),
    "mat2 1-D": lambda: INT_MM(torch.ones(5, 8, dtype=I8), torch.ones(8, dtype=I8)),
    "mat2 3-D": lambda: INT_MM(torch.ones(5, 8, dtype=I8), torch.ones(2, 8, 3, dtype=I8)),
    "inner sizes, and self float": lambda: INT_MM(torch.ones(5, 8), torch.ones(7, 3, dtype=I8)),
    "self bool": lambda: INT_MM(torch.ones(5, 8, dtype=torch.bool), torch.ones(8, 3, dtype=I8)),
    "self int32": lambda: INT_MM(torch.ones(5, 8, dtype=I32), torch.ones(8, 3, dtype=I8)),
    "self uint8 (an error before torch 2.12)": lambda: INT_MM(torch.ones(5, 8, dtype=torch.uint8),
                                                             torch.ones(8, 3, dtype=I8)),
    "mat2 uint8": lambda: INT_MM(torch.ones(5, 8, dtype=I8), torch.ones(8, 3, dtype=torch.uint8)),
    "mat2 float": lambda: INT_MM(torch.ones(5, 8, dtype=I8), torch.ones(8, 3)),
    "out int64 and of another size": lambda: INT_MM(torch.ones(5, 8, dtype=I8), torch.ones(8, 3, dtype=I8),
                                                    out=torch.empty(2, 2, dtype=torch.int64)),
    "out rows": lambda: INT_MM(torch.ones(5, 8, dtype=I8), torch.ones(8, 3, dtype=I8), out=torch.empty(2, 3, dtype=I32)),
    "out columns": lambda: INT_MM(torch.ones(5, 8, dtype=I8), torch.ones(8, 3, dtype=I8), out=torch.empty(5, 4, dtype=I32)),
    "out 1-D": lambda: INT_MM(torch.ones(5, 8, dtype=I8), torch.ones(8, 3, dtype=I8), out=torch.empty(5, dtype=I32)),
    "out 3-D": lambda: INT_MM(torch.ones(5, 8, dtype=I8), torch.ones(8, 3, dtype=I8), out=torch.empty(5, 3, 1, dtype=I32)),
    "out strided": lambda: INT_MM(torch.ones(5, 8, dtype=I8), torch.ones(8, 3, dtype=I8),
                                  out=torch.empty(5, 6, dtype=I32)[:, ::2]),
}


@pytest.mark.parametrize("name", [n for n in ERRORS if "uint8 (an error" not in n or torch.uint8 not in SELF_DTYPES])
def test_errors_are_the_cpus(name):
    cpu, ours = errors_of_cpu_and_ours(lambda *_: ERRORS[name]())
    assert str(ours) == str(cpu)


@pytest.mark.skipif(mps_ops.backend == "emulator", reason="2**31 + 2**16 elements of int8 (2 GiB): a GPU's memory")
def test_past_2_to_the_31_elements():
    """self of 2**16 rows of 2**15 + 1: the rows past element 2**31 read
    where they lie (each row's sum is known: ones, and the row's index in
    the last column)."""
    rows, inner = 2**16, 2**15 + 1
    self = torch.ones(rows, inner, dtype=torch.int8, device=device())
    self[:, -1] = torch.arange(rows, device=device()).remainder(128).to(torch.int8)
    mat2 = torch.ones(inner, 8, dtype=torch.int8, device=device())
    mat2[-1] = 2
    with emulate():
        out = INT_MM(self, mat2)
    expected = (inner - 1) + 2 * torch.arange(rows, device=device()).remainder(128).to(torch.int32)
    assert torch.equal(out, expected[:, None].expand(rows, 8))
