"""where.self and where.self_out (overrides) where the sweeps do not look:
every dtype bit for bit (NaN payloads, signed zeros, complex), Python
numbers and 0-dim CPU operands, promotion, a uint8 condition (the CPU's
deprecation), broadcast, strided and channels-last operands, out= of every
kind, the CPU's errors, 0-dim and empty, gradients, and more than 2**31
elements."""

from __future__ import annotations

import warnings

import pytest
import torch

import mps_ops
from helpers import OnCpu, assert_errors_match, run_on_cpu, run_on_kernels
from mps_ops.testing import device, emulate

# test_layouts.py: the layouts of these ops are tested here.
LAYOUTS_TESTED_HERE = {"where"}
DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint16, torch.uint32,
          torch.uint64, torch.float16, torch.bfloat16, torch.float32, torch.complex32, torch.complex64]


def _values(dtype, shape, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=torch.complex64).to(dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(max(info.min, -2**62), min(info.max, 2**62), shape, generator=g, dtype=torch.int64).to(dtype)


def _mask(shape, seed=7):
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed)) > 0.5


def _bits(t):
    """A tensor's bits (equal means bit for bit: NaN payloads, -0.0)."""
    if t.dtype == torch.bool:
        return t.to(torch.uint8)
    if t.is_complex():
        t = torch.view_as_real(t) if t.dtype == torch.complex64 else t.view(torch.int32)
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


# torch before 2.13: the CPU's where lacks these. Their reference selects
# the same bits through the signed type of their width.
SIGNED_OF_WIDE_UNSIGNED = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}


def _reference(fn, *args):
    try:
        return run_on_cpu(fn, *args)
    except NotImplementedError:
        wide = next(t.dtype for t in args if isinstance(t, torch.Tensor) and t.dtype in SIGNED_OF_WIDE_UNSIGNED)
        signed = [t.view(SIGNED_OF_WIDE_UNSIGNED[wide]) if isinstance(t, torch.Tensor) and t.dtype == wide else t
                  for t in args]
        return run_on_cpu(torch.where, *signed).view(wide)


def _check(fn, *args):
    expected = _reference(fn, *args)
    actual, dispatches = run_on_kernels(fn, *args)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert actual.stride() == expected.stride(), (actual.stride(), expected.stride())
    assert torch.equal(_bits(actual), _bits(expected))
    assert dispatches and all(d.kernel.startswith("where_") for d in dispatches)
    return actual


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_bit_for_bit(dtype):
    a, b = _values(dtype, (6, 9), 1), _values(dtype, (6, 9), 2)
    if dtype.is_floating_point:  # NaNs with payloads and signs, signed zeros
        a.view(-1)[:4] = torch.tensor([float("nan"), -0.0, float("-inf"), 0.0]).to(dtype)
        b.view(-1)[:4] = torch.tensor([0.0, float("nan"), -0.0, -float("nan")]).to(dtype)
    mask = _mask((6, 9))
    _check(torch.where, mask, a, b)
    _check(lambda c, x, y: torch.where(c, x, y, out=torch.empty(0, dtype=dtype)), mask, a, b)


def test_python_numbers_and_cpu_scalars_promote_as_the_cpu():
    mask, x = _mask((5, 7)), _values(torch.float16, (5, 7), 1)
    assert _check(lambda c, a: torch.where(c, a, 0.0), mask, x).dtype == torch.float16
    assert _check(lambda c, a: torch.where(c, 2, a), mask, x).dtype == torch.float16
    assert _check(lambda c, a: torch.where(c, a, 1e6), mask, x.float()).dtype == torch.float32
    assert _check(lambda c, a: torch.where(c, a, 2.5), mask, x.to(torch.int32)).dtype == torch.float32
    assert _check(lambda c, a: torch.where(c, a, True), mask, x.to(torch.int8)).dtype == torch.int8
    _check(lambda c: torch.where(c, 1.0, -1.0), mask)
    _check(torch.where, mask, x, OnCpu(torch.tensor(3.0, dtype=torch.float64)))
    _check(torch.where, OnCpu(torch.tensor(True)), x, x.flip(0))
    _check(torch.where, OnCpu(torch.tensor(False)), x, x.flip(0))
    assert _check(torch.where, mask, x, x.float()).dtype == torch.float32
    assert _check(torch.where, mask, x.to(torch.int64), x.to(torch.uint8)).dtype == torch.int64


def test_a_uint8_condition_warns_and_selects_as_the_cpu():
    mask, a, b = _mask((4, 5)).to(torch.uint8), _values(torch.float32, (4, 5), 1), _values(torch.float32, (4, 5), 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check(torch.where, mask, a, b)


def test_broadcast_strided_and_channels_last_operands():
    a, b = _values(torch.float32, (6, 8), 1), _values(torch.float32, (6, 8), 2)
    _check(torch.where, _mask((6, 1)), a, b[:1])
    _check(torch.where, _mask((8, 1)), a.t().contiguous(), b[:, 0].unsqueeze(0).expand(8, 6))
    _check(torch.where, _mask((8, 6)).t(), a.t().contiguous().t(), b)
    _check(torch.where, _mask((12, 16))[::2, ::2], a[:, ::1], b.t().contiguous().t())
    _check(torch.where, _mask((6, 8)).expand(3, 6, 8), a, b)
    x = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    actual = _check(torch.where, x > 0, x, -x)
    assert actual.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("out", ["empty", "right shape", "transposed", "other shape", "self"])
def test_out_of_every_kind(out):
    a, b, mask = _values(torch.float32, (5, 6), 1), _values(torch.float32, (5, 6), 2), _mask((5, 6))

    def call(c, x, y):
        target = {"empty": lambda: torch.empty(0), "right shape": lambda: torch.empty(5, 6),
                  "transposed": lambda: torch.empty(6, 5).t(), "other shape": lambda: torch.empty(2, 3),
                  "self": lambda: x}[out]()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = torch.where(c, x, y, out=target)
        assert result is target
        return result

    _check(call, mask, a, b)


@pytest.mark.parametrize("call, args", [
    (lambda c, a, b: torch.where(c, a, b), (torch.ones(3), torch.ones(3), torch.ones(3))),
    (lambda c, a, b: torch.where(c, a, b), (torch.ones(3, dtype=torch.int32) > 0, torch.ones(3), torch.ones(2))),
    (lambda c, a, b: torch.where(c, a, b, out=torch.empty(3, dtype=torch.float16)),
     (torch.ones(3) > 0, torch.ones(3), torch.ones(3))),
    (lambda c, a, b: torch.where(c, a, b, out=torch.empty(3, dtype=torch.float16)),
     (torch.ones(3), torch.ones(3), torch.ones(3))),
    (lambda c, a, b: torch.where(c, a, b, out=torch.empty(1).expand(3)), (torch.ones(3) > 0, torch.ones(3), torch.ones(3))),
], ids=["float-condition", "shapes", "out-dtype", "out-dtype-before-condition", "out-overlapping"])
def test_errors_are_the_cpus(call, args):
    assert_errors_match(call, *args)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=str)
def test_double_is_refused(dtype):
    with pytest.raises(TypeError, match="where.*(float64|complex128)"):
        run_on_kernels(torch.where, _mask((3,)), torch.ones(3, dtype=dtype), torch.zeros(3, dtype=dtype))


@pytest.mark.parametrize("shape", [(), (0,), (3, 0)])
def test_0_dim_and_empty(shape):
    mask, a, b = _mask(shape), _values(torch.float32, shape, 1), _values(torch.float32, shape, 2)
    for call in [torch.where, lambda c, x, y: torch.where(c, x, y, out=torch.empty(0))]:
        expected = run_on_cpu(call, mask, a, b)
        actual, dispatches = run_on_kernels(call, mask, a, b)
        assert torch.equal(actual, expected) and actual.shape == expected.shape
        assert bool(dispatches) == (a.numel() > 0)


def test_gradients():
    a, b, mask = _values(torch.float32, (4, 6), 1), _values(torch.float32, (4, 6), 2), _mask((4, 6))

    def gradients(c, x, y):
        x, y = x.clone().requires_grad_(), y.clone().requires_grad_()
        out = torch.where(c, x * x, y.exp()) * torch.arange(24.0).view(4, 6)
        return torch.autograd.grad(out.sum(), (x, y))

    expected = run_on_cpu(gradients, mask, a, b)
    actual, dispatches = run_on_kernels(gradients, mask, a, b)
    torch.testing.assert_close(actual, expected)
    assert any(d.kernel.startswith("where_") for d in dispatches)


@pytest.mark.skipif(mps_ops.backend == "emulator", reason="4 x (2**31 + 2**20) one-byte elements: a GPU's memory")
def test_past_2_to_the_31_elements():
    n = 2**31 + 2**20
    mask = torch.rand(n, device=device()) > 0.5
    a = torch.randint(-100, 100, (n,), dtype=torch.int8, device=device())
    with emulate():
        ours = torch.where(mask, a, -1)
    assert torch.equal(ours, torch.where(mask, a, -1))


@pytest.mark.parametrize("offset", [0, 1, 2], ids=["aligned", "half_word_offset", "word_offset"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.int8, torch.float32], ids=str)
def test_elements_in_words_and_tile_tails(dtype, offset):
    """Three whole tiles and a partial one, the condition read one element at
    a time whatever the values' layout (2-byte values two per word)."""
    n = 3 * 256 * 8 + 37
    mask, a, b = _mask((n + 3,))[offset:offset + n], _values(dtype, (n + 3,), 1)[offset:], _values(dtype, (n + 3,), 2)
    _check(torch.where, mask, a[:n], b[offset:offset + n])


def test_results_live_on_the_device():
    """A 0-dim device condition with two Python numbers (their 0-dim CPU
    tensors): one layout for all three, the result on the condition's
    device. (On the emulator the device is the CPU: a GPU run tells.)"""
    condition = torch.tensor(True, device=device())
    with emulate(), mps_ops.profile() as prof:
        result = torch.where(condition, 1.5, -2.0)
    assert result.device == condition.device and result.item() == 1.5
    # (torch's composite puts the numbers on the device where a GPU runs it.)
    assert prof.dispatches and all(d.kernel.startswith("where_") for d in prof.dispatches)
