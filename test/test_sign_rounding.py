"""The element-wise overrides of wave 2 where the sweeps do not look:
sign, signbit, frac, floor, ceil, trunc, isposinf, isneginf and logit,
bit for bit against the CPU on the special values of every dtype (signed
zeros, NaNs of either sign, infinities, subnormals, integer extremes); the
CPU's errors for their out= and in-place forms; 0-dim and empty inputs;
gradients through them; more than 2**31 elements."""

from __future__ import annotations

import pytest
import torch

import mps_ops
from helpers import assert_matches, errors_of_cpu_and_ours, run_on_kernels
from mps_ops.testing import device, emulate

SAME_DTYPE = ["sign", "frac", "floor", "ceil", "trunc"]
PREDICATES = ["signbit", "isposinf", "isneginf"]
FLOATING = [torch.float32, torch.float16, torch.bfloat16]
INTEGRAL = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
WIDE_UNSIGNED = [torch.uint16, torch.uint32, torch.uint64]


def _special_floats(dtype):
    info = torch.finfo(dtype)
    values = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 0.5, -0.5, 1.5, -1.5, 2.5, -2.5,
                           info.tiny, -info.tiny, info.tiny / 4, -info.tiny / 4, info.max, -info.max, info.eps,
                           1 - info.eps, -(1 - info.eps), 2**23 + 0.5, -(2**23) - 0.5, 1e30, 7.0, -7.0],
                          dtype=torch.float32).to(dtype)
    # A NaN of either sign (the conversions keep its bits).
    nan_bits = {torch.float32: [0x7FC00000, -0x400000], torch.float16: [0x7E00, -0x200],
                torch.bfloat16: [0x7FC0, -0x40]}[dtype]
    int_dtype = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}[dtype]
    return torch.cat([values, torch.tensor(nan_bits, dtype=int_dtype).view(dtype)])


def _extreme_integers(dtype):
    info = torch.iinfo(dtype)
    return torch.tensor([info.min, info.min + 1, -1 if info.min < 0 else 0, 0, 1, info.max - 1, info.max],
                        dtype=dtype)


def _bits(t):
    """A tensor's bits, so that -0.0 differs from 0.0."""
    if t.dtype == torch.bool or not t.is_floating_point():
        return t
    return t.view({4: torch.int32, 2: torch.int16}[t.element_size()])


def _same(actual, expected) -> bool:
    """Bit for bit, but a NaN result matches any NaN: the sign and payload
    of a NaN an operation makes (inf - inf) are the hardware's, and a
    half or bfloat conversion may canonicalize it."""
    if not expected.is_floating_point():
        return torch.equal(actual, expected)
    nan = expected.isnan()
    return torch.equal(actual.isnan(), nan) and torch.equal(_bits(actual)[~nan], _bits(expected)[~nan])


def _op(name):
    return getattr(torch, name)


def _same_bits(name, x):
    expected = _op(name)(x)
    actual, dispatches = run_on_kernels(_op(name), x)
    assert actual.dtype == expected.dtype
    assert _same(actual, expected), (name, x, actual, expected)
    assert dispatches and dispatches[0].op == name


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("name", SAME_DTYPE + PREDICATES)
def test_special_floats_bit_for_bit(name, dtype):
    _same_bits(name, _special_floats(dtype))


@pytest.mark.parametrize("dtype", INTEGRAL + [torch.bool])
@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "trunc"] + PREDICATES)
def test_integer_extremes(name, dtype):
    x = torch.tensor([True, False]) if dtype == torch.bool else _extreme_integers(dtype)
    if name in ("floor", "ceil", "trunc") and dtype == torch.bool:
        errors_of_cpu_and_ours(_op(name), x)  # NotImplementedError on both
        return
    _same_bits(name, x)


@pytest.mark.parametrize("dtype", WIDE_UNSIGNED)
@pytest.mark.parametrize("name", ["floor", "ceil", "trunc"] + PREDICATES)
def test_wide_unsigned(name, dtype):
    """Ours takes them in every release; the CPU's signbit only from torch
    2.13 (2.11's raises NotImplementedError): there the reference is the
    definition (no unsigned value has a sign bit or is infinite)."""
    x = torch.tensor([0, 1, 2**16 - 1], dtype=dtype)
    try:
        _op(name)(x)
    except NotImplementedError:
        actual, _ = run_on_kernels(_op(name), x)
        expected = x if name in ("floor", "ceil", "trunc") else torch.zeros(3, dtype=torch.bool)
        assert torch.equal(actual, expected)
        return
    _same_bits(name, x)


@pytest.mark.parametrize("dtype", WIDE_UNSIGNED + INTEGRAL + [torch.bool])
@pytest.mark.parametrize("name", ["frac", "sign"])
def test_dtypes_the_cpu_refuses_are_refused(name, dtype):
    x = torch.tensor([1, 0], dtype=dtype)
    try:
        _op(name)(x)
    except NotImplementedError:
        cpu, ours = errors_of_cpu_and_ours(_op(name), x)
        assert isinstance(ours, NotImplementedError)
        return
    _same_bits(name, x)


@pytest.mark.parametrize("name", SAME_DTYPE + PREDICATES)
def test_out_and_in_place_errors_are_the_cpus(name):
    """Wrong out= dtypes and complex inputs raise the CPU's exception type,
    in each op's own order of checks."""
    fn = _op(name)
    cases = [(torch.randn(3), torch.empty(3, dtype=torch.int64)), (torch.arange(3), torch.empty(3)),
             (torch.randn(3, dtype=torch.complex64), torch.empty(3, dtype=torch.float16)),
             (torch.randn(3, dtype=torch.complex64), torch.empty(3, dtype=torch.complex64)),
             (torch.randn(3), torch.empty(3, dtype=torch.bool))]
    for x, out in cases:
        try:
            expected = fn(x, out=out.clone())
        except Exception:  # noqa: BLE001 - compared below
            errors_of_cpu_and_ours(lambda a, o: fn(a, out=o), x, out)
            continue
        actual, _ = run_on_kernels(lambda a, o: fn(a, out=o), x, out.clone())
        assert _same(actual, expected)
    if name in SAME_DTYPE:
        inplace = lambda t: getattr(t, f"{name}_")()  # noqa: E731
        for x in [torch.randn(3, dtype=torch.complex64), torch.arange(3), torch.tensor([True])]:
            try:
                expected = inplace(x.clone())
            except Exception:  # noqa: BLE001 - compared below
                errors_of_cpu_and_ours(inplace, x.clone())
                continue
            actual, _ = run_on_kernels(inplace, x.clone())
            assert torch.equal(actual, expected)


@pytest.mark.parametrize("name", SAME_DTYPE)
def test_in_place_into_a_strided_view(name):
    base = torch.randn(6, 8) * 4

    def call(b):
        view = b[:, ::2]
        assert getattr(view, f"{name}_")() is view
        return b

    expected = call(base.clone())
    actual, dispatches = run_on_kernels(call, base.clone())
    assert_matches(actual, expected)
    assert dispatches


@pytest.mark.parametrize("name", SAME_DTYPE + PREDICATES + ["logit"])
@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3)])
def test_0_dim_and_empty(name, shape):
    x = torch.rand(shape)
    expected = _op(name)(x)
    actual, dispatches = run_on_kernels(_op(name), x)
    assert_matches(actual, expected)
    assert bool(dispatches) == (x.numel() > 0)


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int64, torch.uint32])
def test_logit_of_integers_is_float(dtype):
    x = torch.tensor([0, 1], dtype=dtype)
    for eps in (None, 0.25):
        expected = torch.logit(x, eps)
        actual, _ = run_on_kernels(lambda t: torch.logit(t, eps), x)
        assert actual.dtype == torch.float32
        assert_matches(actual, expected)


def test_logit_out_takes_what_the_cpu_casts_to():
    x = torch.rand(5)
    for out in [torch.empty(5, dtype=torch.float16), torch.empty(2, 5).t()[:, 0]]:
        expected = torch.logit(x, 0.01, out=out.clone())
        actual, _ = run_on_kernels(lambda t, o: torch.logit(t, 0.01, out=o), x, out.clone())
        assert_matches(actual, expected)
    errors_of_cpu_and_ours(lambda t, o: torch.logit(t, out=o), torch.arange(3), torch.empty(3, dtype=torch.int64))


@pytest.mark.parametrize("name", ["frac", "logit", "sign", "floor"])
def test_gradients_are_the_cpus(name):
    """Autograd through our forward (torch's backward formulas)."""
    x = torch.rand(4, 5) * 0.9 + 0.05

    def gradient(t):
        t = t.clone().requires_grad_()
        return torch.autograd.grad((_op(name)(t) * torch.arange(20.0).view(4, 5)).sum(), t)[0]

    expected = gradient(x)
    actual, dispatches = run_on_kernels(gradient, x)
    assert_matches(actual, expected)
    assert dispatches


@pytest.mark.skipif(mps_ops.backend == "emulator", reason="2**31 + 2**20 one-byte elements: a GPU's memory")
def test_past_2_to_the_31_elements():
    x = torch.randint(-100, 100, (2**31 + 2**20,), dtype=torch.int8, device=device())
    with emulate():
        ours = torch.sign(x)
    assert torch.equal(ours, torch.sign(x))
    del ours
    with emulate():
        ours = torch.signbit(x)
    assert torch.equal(ours, torch.signbit(x))
