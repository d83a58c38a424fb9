"""logical_and, logical_or and logical_xor (overrides, through their .out
overloads, which the functional and in-place forms call) where the sweeps do
not look: every dtype (NaN and -0.0 among the values), operands of two
dtypes and 0-dim CPU ones, outs of every dtype, in-place on non-bool
tensors, broadcast and strided operands, complex operands, the CPU's errors,
0-dim and empty, and more than 2**31 elements."""

from __future__ import annotations

import pytest
import torch

import mps_ops
from helpers import OnCpu, assert_errors_match, run_on_cpu, run_on_kernels
from mps_ops.testing import device, emulate

# test_layouts.py: the layouts of these ops are tested here.
LAYOUTS_TESTED_HERE = {"logical_and", "logical_or", "logical_xor"}
OPS = {"logical_and": torch.logical_and, "logical_or": torch.logical_or, "logical_xor": torch.logical_xor}
DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint16, torch.uint32,
          torch.uint64, torch.float16, torch.bfloat16, torch.float32]
WIDE_UNSIGNED = (torch.uint16, torch.uint32, torch.uint64)


def _values(dtype, shape, seed):
    """About a third zeros; floats also NaN, -0.0 and tiny values."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-1, 2, shape, generator=g) * torch.randint(1, 100, shape, generator=g)
    if dtype.is_floating_point:
        x = x.float()
        flat = x.view(-1)
        flat[:4] = torch.tensor([float("nan"), -0.0, 1e-30, float("-inf")])[: flat.numel()]
    if dtype in WIDE_UNSIGNED or dtype == torch.uint8:
        x = x.abs()
    return x.to(dtype)


def _reference(fn, *args, in_place_dtype=None):
    """The CPU's op; where it lacks the wide unsigned dtypes (torch 2.11's),
    its definition on the operands' nonzero tests (an in-place call's result
    then cast to the tensor's dtype)."""
    try:
        return run_on_cpu(fn, *args)
    except NotImplementedError:
        if not any(isinstance(t, torch.Tensor) and t.dtype in WIDE_UNSIGNED for t in args):
            raise
    result = run_on_cpu(fn, *[t != 0 if isinstance(t, torch.Tensor) and t.dtype in WIDE_UNSIGNED else t
                              for t in args])
    return result if in_place_dtype is None else result.to(in_place_dtype)


def _check(fn, *args, in_place_dtype=None):
    expected = _reference(fn, *args, in_place_dtype=in_place_dtype)
    actual, dispatches = run_on_kernels(fn, *args)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert torch.equal(actual, expected)
    assert dispatches and all(d.kernel.startswith("logical_") for d in dispatches)
    return actual


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", OPS)
def test_every_dtype_and_form(name, dtype):
    fn = OPS[name]
    a, b = _values(dtype, (7, 9), 1), _values(dtype, (7, 9), 2)
    _check(fn, a, b)
    _check(lambda x, y: fn(x, y, out=torch.empty(0, dtype=torch.bool)), a, b)
    _check(lambda x, y: getattr(x.clone(), f"{name}_")(y), a, b, in_place_dtype=dtype)


@pytest.mark.parametrize("name", OPS)
def test_operands_of_two_dtypes_and_cpu_scalars(name):
    fn = OPS[name]
    a = _values(torch.float16, (5, 6), 1)
    _check(fn, a, _values(torch.int64, (5, 6), 2))
    _check(fn, _values(torch.bool, (5, 6), 3), a)
    _check(fn, a, OnCpu(torch.tensor(0.0, dtype=torch.float64)))
    _check(fn, a, OnCpu(torch.tensor(3)))
    # (A CPU scalar first: torch's functional composite allocates the out
    # beside it, on the CPU.)
    _check(fn, a, _values(torch.uint8, (5, 6), 4))


@pytest.mark.parametrize("out_dtype", [torch.float32, torch.int8, torch.float16, torch.int64], ids=str)
@pytest.mark.parametrize("name", OPS)
def test_outs_and_in_place_of_any_dtype(name, out_dtype):
    """The CPU takes any out (its comparison iterator casts to it)."""
    fn = OPS[name]
    a, b = _values(torch.float32, (6, 8), 1), _values(torch.int32, (6, 8), 2)
    _check(lambda x, y: fn(x, y, out=torch.empty(0, dtype=out_dtype)), a, b)
    _check(lambda x, y: fn(x, y, out=torch.empty(8, 6, dtype=out_dtype).t()), a, b)
    _check(lambda x, y: getattr(x.to(out_dtype), f"{name}_")(y), a, b)


@pytest.mark.parametrize("name", OPS)
def test_broadcast_and_strided_operands(name):
    fn = OPS[name]
    a, b = _values(torch.float32, (6, 8), 1), _values(torch.float32, (6, 8), 2)
    _check(fn, a[:, :1], b[:1])
    _check(fn, a.t(), b.t())
    _check(fn, a[::2, 1::3], b[1::2, ::3])
    _check(fn, a.expand(3, 6, 8), b[0])
    _check(lambda x, y: getattr(x, f"{name}_")(y), a.clone()[:, ::2], b[:, 1::2])


@pytest.mark.parametrize("name", OPS)
def test_complex_operands_are_their_nonzero_tests(name):
    fn = OPS[name]
    z = torch.complex(_values(torch.float32, (4, 5), 1), _values(torch.float32, (4, 5), 2))
    _check(fn, z, _values(torch.int64, (4, 5), 3))
    _check(fn, _values(torch.float16, (4, 5), 3), z)
    _check(lambda x, y: fn(x, y, out=torch.empty(0)), z, z.conj())
    _check(fn, z.to(torch.complex32), _values(torch.float32, (4, 5), 4))  # computed in complex64


@pytest.mark.parametrize("call, args", [
    (torch.logical_and, (torch.ones(3, dtype=torch.uint16), torch.ones(3, dtype=torch.uint32))),
    (torch.logical_or, (torch.ones(3, dtype=torch.complex32), torch.ones(3, dtype=torch.int64))),
    (torch.logical_xor, (torch.ones(3), torch.ones(2))),
    (lambda a, b: torch.logical_and(a, b, out=torch.empty(1).expand(3)), (torch.ones(3), torch.ones(3))),
    (lambda a, b: torch.logical_and(a, b, out=torch.empty(1, dtype=torch.bool).expand(3)),
     (torch.ones(3), torch.ones(3))),
    (lambda a, b: a.logical_or_(b), (torch.ones(3), torch.ones(2, 3))),
], ids=["wide-unsigned-promotion", "complex32", "shapes", "out-overlapping", "bool-out-overlapping",
        "inplace-broadcast"])
def test_errors_are_the_cpus(call, args):
    assert_errors_match(call, *args)


def test_float64_is_refused():
    with pytest.raises(TypeError, match="logical_and.*float64"):
        run_on_kernels(torch.logical_and, torch.ones(3, dtype=torch.float64), torch.ones(3))


@pytest.mark.parametrize("shape", [(), (0,), (3, 0)])
def test_0_dim_and_empty(shape):
    a, b = _values(torch.float32, shape, 1), _values(torch.float32, shape, 2)
    for fn in OPS.values():
        expected = fn(a, b)
        actual, dispatches = run_on_kernels(fn, a, b)
        assert torch.equal(actual, expected) and actual.shape == expected.shape
        assert bool(dispatches) == (a.numel() > 0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.int8, torch.float32], ids=str)
def test_elements_in_words_and_tile_tails(dtype):
    n = 3 * 256 * 8 + 37
    a, b = _values(dtype, (n + 3,), 1), _values(dtype, (n + 3,), 2)
    for offset in (0, 1, 2):
        _check(torch.logical_xor, a[offset:offset + n], b[:n])


@pytest.mark.skipif(mps_ops.backend == "emulator", reason="3 x (2**31 + 2**20) one-byte elements: a GPU's memory")
def test_past_2_to_the_31_elements():
    n = 2**31 + 2**20
    a = torch.randint(-1, 2, (n,), dtype=torch.int8, device=device())
    with emulate():
        ours = torch.logical_xor(a, a.flip(0))
    assert torch.equal(ours, torch.logical_xor(a, a.flip(0)))
