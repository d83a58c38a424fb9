"""addcmul and addcdiv (overrides) where the sweeps do not look: every form
in every dtype, the value's conversion (truncated for integers, the CPU's
overflow error), operands of several dtypes and devices (a Python number's
0-dim CPU tensor), broadcast and strided operands, in-place into views,
complex64 (torch's own ops), the CPU's errors in its order, 0-dim and empty,
gradients, an optimizer's step, and more than 2**31 elements."""

from __future__ import annotations

import pytest
import torch

import mps_ops
from helpers import OnCpu, assert_errors_match, assert_matches, run_on_cpu, run_on_kernels
from mps_ops.testing import device, emulate

aten = torch.ops.aten
INTEGRAL = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
FLOATING = [torch.float32, torch.float16, torch.bfloat16]
# test_layouts.py: the layouts of these ops are tested here.
LAYOUTS_TESTED_HERE = {"addcmul", "addcdiv"}
OPS = {"addcmul": (torch.addcmul, torch.Tensor.addcmul_), "addcdiv": (torch.addcdiv, torch.Tensor.addcdiv_)}


def _operands(dtype, shape=(5, 7), seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        a, b, c = (torch.randn(shape, generator=g).to(dtype) for _ in range(3))
        return a, b, c.abs().add(0.5).to(dtype)  # a divisor away from 0
    lo = 0 if dtype == torch.uint8 else -5
    return tuple(torch.randint(lo, 6, shape, generator=g, dtype=dtype) for _ in range(3))


def _check(fn, *args):
    expected = run_on_cpu(fn, *args)
    actual, dispatches = run_on_kernels(fn, *args)
    assert_matches(actual, expected)
    assert dispatches
    return actual


def _forms(name, value):
    functional, inplace = OPS[name]
    return {
        "functional": lambda s, t1, t2: functional(s, t1, t2, value=value),
        "out": lambda s, t1, t2: functional(s, t1, t2, value=value, out=torch.empty(0, dtype=s.dtype)),
        "inplace": lambda s, t1, t2: inplace(s.clone(), t1, t2, value=value),
    }


# addcdiv takes no integers: the CPU refuses integer division (test_errors_are_the_cpus).
DTYPES_OF = {"addcmul": INTEGRAL + FLOATING, "addcdiv": FLOATING}


@pytest.mark.parametrize("form", ["functional", "out", "inplace"])
@pytest.mark.parametrize("name, dtype", [(n, d) for n in OPS for d in DTYPES_OF[n]], ids=str)
def test_every_form_and_dtype(name, dtype, form):
    value = 3 if not dtype.is_floating_point else -0.75
    _check(_forms(name, value)[form], *_operands(dtype))


@pytest.mark.parametrize("value", [0.5, -1.9, True, 0, -1])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int64], ids=str)
def test_integer_value_is_converted_as_the_cpu_converts_it(dtype, value):
    """A float value truncates to the integer type (0.5 -> 0, -1.9 -> -1);
    uint8 takes -1 (the CPU's Scalar::to lets it wrap) but not -1.9."""
    call = lambda s, a, b: torch.addcmul(s, a, b, value=value)  # noqa: E731
    if dtype == torch.uint8 and value == -1.9:
        assert_errors_match(call, *_operands(dtype))
    else:
        _check(call, *_operands(dtype))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_and_bfloat16_compute_in_float(dtype):
    """A value past half's range is fine: the CPU takes it as a float and
    rounds the sum once."""
    s, a, b = (torch.tensor([60000.0, -3.0, 1e-3]).to(dtype) for _ in range(3))
    for name in OPS:
        _check(lambda x, y, z: OPS[name][0](x, y, z, value=1e5), s, a / 1e4, b)


def test_mixed_dtypes_and_cpu_scalars_promote_as_the_cpu():
    s, a, b = _operands(torch.float32)
    for name, (functional, inplace) in OPS.items():
        actual = _check(lambda x, y, z: functional(x, y, z, value=2), s.half(), a, b)
        assert actual.dtype == torch.float32
        _check(lambda x, y, z: functional(x, y, z), s, OnCpu(torch.tensor(2.5)), b)
        _check(lambda x, y, z: functional(x, y, z), OnCpu(torch.tensor(1.5, dtype=torch.float64)), a, b)
        _check(lambda x, y, z: inplace(x.clone(), y, z, value=0.5), s.half(), a, b)
        _check(lambda x, y, z: functional(x, y, z, out=torch.empty(5, 7, dtype=torch.float16)), s, a, b)
    actual = _check(lambda x, y, z: torch.addcmul(x, y, z), s.to(torch.int32), a.to(torch.int64), b.to(torch.int8))
    assert actual.dtype == torch.int64
    _check(lambda x, y, z: torch.addcdiv(x, y, z), s.to(torch.int32), a, b.to(torch.int8).clamp(min=1))


@pytest.mark.parametrize("name", OPS)
def test_broadcast_and_strided_operands(name):
    functional, inplace = OPS[name]
    s, a, b = _operands(torch.float32, (6, 8))
    _check(lambda x, y, z: functional(x, y, z, value=0.3), s[:, :1], a[:1], b)
    _check(lambda x, y, z: functional(x, y, z), s.t(), a.t(), b.t())  # transposed: a transposed result
    _check(lambda x, y, z: functional(x, y, z), s[::2, 1::3], a[1::2, ::3], b[::2, ::3])
    _check(lambda x, y, z: functional(x, y, z), s.expand(3, 6, 8), a, b[0])
    channels_last = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    actual = _check(lambda x, y, z: functional(x, y, z), channels_last, channels_last, channels_last.abs() + 1)
    assert actual.is_contiguous(memory_format=torch.channels_last)

    def into_view(x, y, z):
        base = torch.zeros(6, 16)
        view = base[:, ::2]
        inplace(view, y, z, value=2.0)
        return base

    _check(into_view, s, a, b)
    _check(lambda x, y, z: inplace(x.clone(), y[0], z[:, :1]), s, a, b)
    _check(lambda x, y, z: functional(x, y, z, out=torch.empty(8, 6).t()), s, a, b)


@pytest.mark.parametrize("name", OPS)
def test_inplace_with_an_operand_that_is_self(name):
    functional, inplace = OPS[name]
    s, a, b = _operands(torch.float32)
    _check(lambda x, y: inplace(x.clone(), y, y), s, b)
    _check(lambda x, y: (lambda c: inplace(c, c, y))(x.clone()), s, b)


@pytest.mark.parametrize("name", OPS)
def test_complex64_takes_torchs_own_ops(name):
    functional, inplace = OPS[name]
    s, a, b = (torch.randn(4, 5, dtype=torch.complex64) for _ in range(3))
    for call in [lambda x, y, z: functional(x, y, z, value=2 - 1j), lambda x, y, z: inplace(x.clone(), y, z),
                 lambda x, y, z: functional(x, y, z, out=torch.empty(4, 5, dtype=torch.complex64))]:
        expected = call(s, a, b)
        actual, _ = run_on_kernels(call, s, a, b)
        torch.testing.assert_close(actual, expected)  # torch's vectorised complex division rounds otherwise
    for real in (torch.float32, torch.float16):  # half operands promote before any step
        t1, t2 = a.real.to(real), (b.real.abs() + 0.5).to(real)
        expected = functional(s, t1, t2, value=0.3)
        actual, _ = run_on_kernels(lambda x, y, z: functional(x, y, z, value=0.3), s, t1, t2)
        torch.testing.assert_close(actual, expected)


@pytest.mark.parametrize("call, args", [
    (lambda s, a, b: torch.addcdiv(s, a, b), (torch.ones(3), torch.ones(3, dtype=torch.int64),
                                              torch.ones(3, dtype=torch.int32))),
    (lambda s, a, b: torch.addcdiv(s, a, b), (torch.ones(3, dtype=torch.complex64), torch.ones(3, dtype=torch.int64),
                                              torch.ones(3, dtype=torch.bool))),
    (lambda s, a, b: torch.addcmul(s, a, b), (torch.ones(3, dtype=torch.bool),) * 3),
    (lambda s, a, b: torch.addcmul(s, a, b), (torch.ones(3, dtype=torch.uint16),) * 3),
    (lambda s, a, b: torch.addcmul(s, a, b, value=300), (torch.ones(3, dtype=torch.int8),) * 3),
    (lambda s, a, b: torch.addcmul(s, a, b, value=1e300), (torch.ones(3),) * 3),
    (lambda s, a, b: torch.addcmul(s, a, b, value=1j), (torch.ones(3),) * 3),
    (lambda s, a, b: s.addcmul_(a, b), (torch.ones(3, dtype=torch.int64), torch.ones(3), torch.ones(3))),
    (lambda s, a, b: s.addcdiv_(a, b), (torch.ones(3), torch.ones(2, 3), torch.ones(3))),
    (lambda s, a, b: torch.addcmul(s, a, b, out=torch.empty(3, dtype=torch.int64)), (torch.ones(3),) * 3),
    (lambda s, a, b: torch.addcmul(s, a, b), (torch.ones(3), torch.ones(2), torch.ones(3))),
], ids=["addcdiv-integers", "addcdiv-integers-complex-self", "bool", "uint16", "int8-value-overflow",
        "float-value-overflow", "complex-value", "inplace-cast", "inplace-broadcast",
        "out-cast", "shapes"])
def test_errors_are_the_cpus(call, args):
    assert_errors_match(call, *args)


def test_float64_and_complex32_are_refused():
    """Metal has no double; complex32 has no kernel (the CPU takes it)."""
    with pytest.raises(TypeError, match="float64"):
        run_on_kernels(lambda s, a, b: torch.addcmul(s, a, b), *(torch.ones(3, dtype=torch.float64),) * 3)
    with pytest.raises(NotImplementedError, match="addcmul.*ComplexHalf"):
        run_on_kernels(lambda s, a, b: torch.addcmul(s, a, b), *(torch.ones(3, dtype=torch.complex32),) * 3)


@pytest.mark.parametrize("shape", [(), (0,), (3, 0)])
def test_0_dim_and_empty(shape):
    s, a, b = _operands(torch.float32, shape)
    for name in OPS:
        for form, call in _forms(name, 2.0).items():
            expected = call(s, a, b)
            actual, dispatches = run_on_kernels(call, s, a, b)
            assert_matches(actual, expected)
            assert bool(dispatches) == (s.numel() > 0), form


def test_gradients():
    s, a, b = _operands(torch.float32)

    def gradients(x, y, z):
        x, y, z = (t.clone().requires_grad_() for t in (x, y, z))
        out = torch.addcmul(x, y, z, value=0.5) * torch.addcdiv(x, y, z, value=-2.0)
        return torch.autograd.grad(out.sum(), (x, y, z))

    _check(gradients, s, a, b)


@pytest.mark.parametrize("optimizer", [torch.optim.Adam, torch.optim.AdamW, torch.optim.RMSprop])
def test_an_optimizers_single_tensor_steps(optimizer):
    """foreach=False: the single-tensor path, addcmul_ and addcdiv_ on each
    parameter."""
    weights = _operands(torch.float32, (16, 9))

    def three_steps(*ws):
        params = [w.clone().requires_grad_() for w in ws]
        opt = optimizer(params, lr=1e-2, foreach=False)
        for step in range(3):
            opt.zero_grad()
            sum((p * (step + 1)).pow(2).sum() for p in params).backward()
            opt.step()
        return [p.detach() for p in params]

    _check(three_steps, *weights)


@pytest.mark.skipif(mps_ops.backend == "emulator", reason="3 x (2**31 + 2**20) one-byte elements: a GPU's memory")
def test_past_2_to_the_31_elements():
    n = 2**31 + 2**20
    s = torch.randint(-100, 100, (n,), dtype=torch.int8, device=device())
    with emulate():
        ours = torch.addcmul(s, s, s, value=3)
    assert torch.equal(ours, torch.addcmul(s, s, s, value=3))
    del ours
    expected = s.clone().addcmul_(s, s, value=-1)  # torch's own kernel
    with emulate():
        s.addcmul_(s, s, value=-1)
    assert torch.equal(s, expected)


@pytest.mark.parametrize("offset", [0, 1, 2], ids=["aligned", "half_word_offset", "word_offset"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int16], ids=str)
def test_two_byte_elements_in_words_and_tile_tails(dtype, offset):
    """Three whole tiles and a partial one: 2-byte operands are read two per
    word where every operand starts on a word, one at a time otherwise."""
    n = 3 * 256 * 8 + 37
    s, a, b = (t[offset:offset + n] for t in _operands(dtype, (n + 3,)))
    _check(lambda x, y, z: torch.addcmul(x, y, z, value=2), s, a, b)
    if dtype.is_floating_point:
        _check(lambda x, y, z: torch.addcdiv(x, y, z, value=2), s, a, b)


def test_results_live_on_the_device():
    """self a 0-dim CPU tensor beside 0-dim device operands: one layout for
    all three, the result on the operands' device. (On the emulator the
    device is the CPU: a GPU run tells.)"""
    t1, t2 = torch.tensor(2.0, device=device()), torch.tensor(3.0, device=device())
    with emulate(), mps_ops.profile() as prof:
        result = torch.addcmul(torch.tensor(1.0), t1, t2, value=0.5)
    assert result.device == t1.device and result.item() == 4.0
    assert prof.dispatches
