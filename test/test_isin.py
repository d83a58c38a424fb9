"""isin (override, every release) where the sweeps do not look: every
dtype, the scan (a few test elements) and the search (many, sorted), NaN
and -0.0, invert, Python numbers and promotion, strided elements, outs of
every kind, the CPU's errors, empty and 0-dim operands, and more than 2**31
elements."""

from __future__ import annotations

import pytest
import torch

import mps_ops
from helpers import assert_errors_match, run_on_cpu, run_on_kernels
from mps_ops.testing import device, emulate

# test_layouts.py: the layouts of isin are tested here (strided elements and test elements).
LAYOUTS_TESTED_HERE = {"isin"}
DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32]


def _values(dtype, shape, seed, high=40):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0 if dtype == torch.uint8 else -high, high, shape, generator=g)
    return x.to(dtype)


def _check(fn, *args):
    expected = run_on_cpu(fn, *args)
    actual, dispatches = run_on_kernels(fn, *args)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert actual.stride() == expected.stride()
    assert torch.equal(actual, expected)
    assert dispatches and all(d.kernel.startswith("isin_") for d in dispatches)
    return actual


@pytest.mark.parametrize("tests", [1, 7, 33, 500], ids=lambda n: f"{n}_tests")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_scanned_and_searched(dtype, tests):
    elements, test_elements = _values(dtype, (9, 13), 1), _values(dtype, (tests,), 2)
    _check(torch.isin, elements, test_elements)
    _check(lambda e, t: torch.isin(e, t, invert=True), elements, test_elements)
    # assume_unique holds the caller to unique elements and test elements
    # (the CPU's sort path relies on it).
    _check(lambda e, t: torch.isin(e, t, assume_unique=True), torch.unique(elements), torch.unique(test_elements))
    _check(lambda e, t: torch.isin(e, t, out=torch.empty(0, dtype=torch.bool)), elements, test_elements)


@pytest.mark.parametrize("tests", [4, 64], ids=["scanned", "searched"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_nan_is_in_nothing_and_signed_zeros_meet(dtype, tests):
    special = torch.tensor([float("nan"), -0.0, 0.0, float("inf"), -float("inf"), 1.5])
    test_elements = torch.cat([torch.tensor([float("nan"), 0.0, float("inf")]),
                               torch.randn(tests - 3) * 100]).to(dtype)
    elements = torch.cat([special, torch.randn(20)]).to(dtype)
    _check(torch.isin, elements, test_elements)
    _check(torch.isin, elements, torch.tensor([-0.0, float("nan")] * (tests // 2)).to(dtype))


def test_python_numbers_and_promotion_as_the_cpu():
    ints, floats = _values(torch.int64, (5, 6), 1), _values(torch.float32, (40,), 2) / 2
    _check(torch.isin, ints, floats)
    _check(torch.isin, floats, ints)
    _check(torch.isin, ints.to(torch.uint8).abs(), ints.to(torch.int8))
    _check(lambda t: torch.isin(3, t), ints)
    _check(lambda t: torch.isin(2.5, t), ints)
    _check(lambda t: torch.isin(2.5, t, invert=True, out=torch.empty(0, dtype=torch.bool)), floats)
    _check(lambda t: torch.isin(-4, t), floats.half())


def test_strided_elements_and_outs():
    elements, test_elements = _values(torch.float32, (8, 10), 1), _values(torch.float32, (50,), 2)
    _check(torch.isin, elements.t(), test_elements)
    _check(torch.isin, elements[::2, 1::3], test_elements[::3])
    _check(torch.isin, elements, test_elements.view(5, 10).t())
    _check(lambda e, t: torch.isin(e, t, out=torch.empty(10, 8, dtype=torch.bool).t()), elements, test_elements)
    with pytest.warns(UserWarning, match="resized"):
        _check(lambda e, t: torch.isin(e, t, out=torch.empty(3, dtype=torch.bool)), elements, test_elements)


@pytest.mark.parametrize("call, args", [
    (torch.isin, (torch.ones(3, dtype=torch.bool), torch.ones(2, dtype=torch.bool))),
    (torch.isin, (torch.ones(3), torch.ones(2, dtype=torch.complex64))),
    (torch.isin, (torch.ones(3, dtype=torch.uint16), torch.ones(2, dtype=torch.uint16))),
    (torch.isin, (torch.ones(3, dtype=torch.uint32), torch.ones(2, dtype=torch.int64))),
    (lambda e, t: torch.isin(e, t, out=torch.empty(3)), (torch.ones(3), torch.ones(2))),
    (lambda e, t: torch.isin(e, t, out=torch.empty(1, dtype=torch.bool).expand(3)), (torch.ones(3), torch.ones(2))),
], ids=["bool", "complex", "uint16", "uint32-with-int64", "out-dtype", "out-overlapping"])
def test_errors_are_the_cpus(call, args):
    # The CPU's uint16 error comes from its dtype dispatch, which an empty
    # call (check_as_the_cpu's twins) never reaches: the type is the CPU's,
    # the words ours.
    assert_errors_match(call, *args, same_words=args[0].dtype != torch.uint16)


def test_float64_is_refused():
    with pytest.raises(TypeError, match="isin.*float64"):
        run_on_kernels(torch.isin, torch.ones(3, dtype=torch.float64), torch.ones(2, dtype=torch.float64))


@pytest.mark.parametrize("elements_shape, tests_shape", [((), (5,)), ((0,), (5,)), ((4, 0), (5,)), ((6,), (0,)),
                                                         ((6,), ()), ((), ())])
def test_0_dim_and_empty(elements_shape, tests_shape):
    elements, test_elements = _values(torch.int32, elements_shape, 1, 3), _values(torch.int32, tests_shape, 2, 3)
    for call in [torch.isin, lambda e, t: torch.isin(e, t, invert=True)]:
        expected = call(elements, test_elements)
        actual, dispatches = run_on_kernels(call, elements, test_elements)
        assert torch.equal(actual, expected) and actual.shape == expected.shape
        assert bool(dispatches) == (elements.numel() > 0 and test_elements.numel() > 0)


@pytest.mark.skipif(mps_ops.backend == "emulator", reason="2**31 + 2**20 one-byte elements, twice: a GPU's memory")
def test_past_2_to_the_31_elements():
    """Dispatches of 2**30 elements each; the last is partial."""
    elements = torch.randint(-100, 100, (2**31 + 2**20,), dtype=torch.int8, device=device())
    test_elements = torch.tensor([-7, 0, 99], dtype=torch.int8, device=device())
    with emulate():
        ours = torch.isin(elements, test_elements)
    assert torch.equal(ours, torch.isin(elements, test_elements))
