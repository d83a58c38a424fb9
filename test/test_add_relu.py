"""aten::_add_relu has no OpInfo: its overloads against the CPU here (layouts
are in test_layouts.py)."""

from __future__ import annotations

import pytest
import torch

import mps_ops
from helpers import OnCpu, assert_matches, run_on_cpu, run_on_kernels

DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.float32]


def _inputs(dtype, shape=(6, 7)):
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
    return torch.randint(-20, 20, shape, dtype=dtype), torch.randint(-20, 20, shape, dtype=dtype)


def _check(fn, *args):
    expected = run_on_cpu(fn, *args)
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


def test_the_cpu_reference_leaves_in_place_arguments_for_our_run():
    # On the emulator our run takes the very tensors the reference got: had
    # the reference written into them, an in-place check would compare a
    # result with itself.
    a, b = _inputs(torch.float32)
    x = a.clone()
    run_on_cpu(lambda s, o: torch.ops.aten._add_relu_.Tensor(s, o, alpha=2), x, b)
    assert torch.equal(x, a)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_scalar_overloads(dtype):
    a, _ = _inputs(dtype)
    other = 3 if not dtype.is_floating_point else 0.75
    _check(lambda x: torch.ops.aten._add_relu.Scalar(x, other, 2), a)
    _check(lambda x: torch.ops.aten._add_relu_.Scalar(x, other, 2), a.clone())


def test_float_alpha_on_integers_truncates_like_the_cpu():
    a, b = _inputs(torch.int32)
    _check(lambda x, y: torch._add_relu(x, y, alpha=1.75), a, b)


# The CPU's vectorized loop covers whole chunks of 16 float32 elements (two
# AVX2 vectors); its scalar tail loop treats NaN and the rounding of
# self + alpha * other differently (it returns 0 for NaN and rounds the
# product). Ours is the vectorized loop everywhere, so the comparisons below
# use 16 elements.
CHUNK = 16


def _chunk(values):
    return torch.tensor((list(values) * CHUNK)[:CHUNK], dtype=torch.float32)


def test_nan_stays_nan_like_the_cpu_vectorized_loop():
    a = _chunk([float("nan"), -1.0, 2.0, 0.5])
    b = _chunk([0.0, 0.0, float("nan"), float("nan")])
    actual = _check(torch._add_relu, a, b)
    assert actual[:4].isnan().tolist() == [True, False, True, True]


def test_overflow_saturates_at_the_float_maximum_like_the_cpu():
    big = torch.finfo(torch.float32).max
    a = _chunk([big, -big, float("inf"), float("-inf"), 3e38, -3e38])
    b = _chunk([big, big, 1.0, 1.0, 3e38, 3e38])
    actual = _check(lambda x, y: torch._add_relu(x, y, alpha=1.5), a, b)
    assert actual[0].item() == big and actual[2].item() == big and actual[3].item() == 0.0


@pytest.mark.parametrize("alpha", [float("inf"), float("-inf"), float("nan")])
def test_non_finite_alpha_on_floats(alpha):
    a, b = _chunk([1.0, -2.0, 0.0, 3.0]), _chunk([1.0, 1.0, 0.0, -1.0])
    _check(lambda x, y: torch._add_relu(x, y, alpha=alpha), a, b)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64], ids=str)
def test_integers_wrap_then_clamp_like_the_cpu(dtype):
    top, bottom = torch.iinfo(dtype).max, torch.iinfo(dtype).min
    a = torch.tensor([top, top, bottom, bottom, 5, -5], dtype=dtype)
    b = torch.tensor([top, 1, bottom, -1, top, bottom], dtype=dtype)
    for alpha in (1, 2, -1):
        _check(lambda x, y: torch._add_relu(x, y, alpha=alpha), a, b)


def test_mixed_dtypes_clamp_at_the_maximum_of_self_dtype_like_the_cpu():
    # self int8, other float: computed in float, clamped at 127 (self's maximum).
    a = torch.tensor([100, -3, 50], dtype=torch.int8)
    b = torch.tensor([100.0, 2.0, 70.5])
    _check(torch._add_relu, a, b)


def test_alpha_that_overflows_the_computing_dtype_raises_what_the_cpu_raises():
    a = torch.ones(3, dtype=torch.int8)
    with pytest.raises(RuntimeError) as cpu_error:
        torch._add_relu(a, a, alpha=1000)
    with pytest.raises(RuntimeError) as ours:
        run_on_kernels(lambda x, y: torch._add_relu(x, y, alpha=1000), a, a)
    assert type(ours.value) is type(cpu_error.value)


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
