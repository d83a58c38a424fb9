"""aten::_add_relu has no OpInfo: its overloads against the CPU here (layouts
are in test_layouts.py)."""

from __future__ import annotations

import pytest
import torch

import mps_ops
from helpers import OnCpu, assert_matches, on_cpu, run_on_kernels

DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.float32]


def _inputs(dtype, shape=(6, 7)):
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
    return torch.randint(-20, 20, shape, dtype=dtype), torch.randint(-20, 20, shape, dtype=dtype)


def _check(fn, *args):
    expected = fn(*on_cpu(args))
    actual, dispatches = run_on_kernels(fn, *args)
    assert_matches(actual, expected, getattr(fn, "__name__", "add_relu"))
    assert dispatches and all(d.kernel.startswith("add_relu_") for d in dispatches)
    return actual


def test_registered_for_every_overload():
    (record,) = [r for r in mps_ops.ops() if r.name == "aten::_add_relu"]
    assert record.active
    assert set(record.overloads) == {"_add_relu.Tensor", "_add_relu.out", "_add_relu_.Tensor",
                                     "_add_relu.Scalar", "_add_relu_.Scalar"}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("alpha", [1, -2, 3])
def test_tensor_overload(dtype, alpha):
    a, b = _inputs(dtype)
    _check(lambda x, y: torch._add_relu(x, y, alpha=alpha), a, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_out_and_inplace(dtype):
    a, b = _inputs(dtype)
    _check(lambda x, y, o: torch.ops.aten._add_relu.out(x, y, alpha=2, out=o), a, b, torch.empty(0, dtype=dtype))

    def inplace(x, y):
        returned = torch.ops.aten._add_relu_.Tensor(x, y, alpha=2)
        assert returned is x
        return x

    _check(inplace, a.clone(), b)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_scalar_overloads(dtype):
    a, _ = _inputs(dtype)
    other = 3 if not dtype.is_floating_point else 0.75
    _check(lambda x: torch.ops.aten._add_relu.Scalar(x, other, 2), a)
    _check(lambda x: torch.ops.aten._add_relu_.Scalar(x, other, 2), a.clone())


def test_float_alpha_on_integers_truncates_like_the_cpu():
    a, b = _inputs(torch.int32)
    _check(lambda x, y: torch._add_relu(x, y, alpha=1.75), a, b)


def test_nan_becomes_zero_like_the_cpu():
    a = torch.tensor([float("nan"), -1.0, 2.0])
    b = torch.tensor([0.0, 0.0, float("nan")])
    actual = _check(torch._add_relu, a, b)
    assert actual.tolist() == [0.0, 0.0, 0.0]


def test_layouts_with_a_cpu_scalar_operand_and_transposed_inputs():
    a, b = _inputs(torch.float32, (7, 5))
    _check(torch._add_relu, a.t(), OnCpu(torch.tensor(0.5)))
    _check(torch._add_relu, a.t(), b.t())


@pytest.mark.parametrize("dtype", [torch.uint8, torch.bool, torch.float16, torch.bfloat16], ids=str)
def test_unsupported_dtypes_raise_what_the_cpu_raises(dtype):
    a = torch.ones(3, dtype=dtype)
    with pytest.raises(RuntimeError) as cpu_error:
        torch._add_relu(a, a)
    with pytest.raises(RuntimeError, match="Unsupported datatype for add_relu") as ours:
        run_on_kernels(torch._add_relu, a, a)
    assert type(ours.value) is type(cpu_error.value)


def test_float64_is_refused_with_type_error():
    a = torch.ones(3, dtype=torch.float64)
    with pytest.raises(TypeError, match="Metal has no double"):
        run_on_kernels(torch._add_relu, a, a)
