"""glu_jvp and glu_backward_jvp against the CPU: halves along the first,
middle and last dims, transposed and strided operands, half/bfloat16, and
glu's forward-mode derivative through torch.func.jvp on our kernel."""

from __future__ import annotations

import mps_ops
import pytest
import torch
import torch.nn.functional as F

from helpers import assert_matches, run_on_kernels
from mps_ops.testing import device, emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"glu_jvp", "glu_backward_jvp"}

LAYOUTS = {
    "contiguous": lambda shape: torch.randn(shape),
    "transposed": lambda shape: torch.randn(shape[::-1]).permute(*reversed(range(len(shape)))),
    "strided": lambda shape: torch.randn(*shape[:-1], 2 * shape[-1])[..., ::2],
}


def _operands(layout, dim, dtype=torch.float32):
    torch.manual_seed(0)
    shape = [3, 4, 6]
    shape[dim] = 8
    make = LAYOUTS[layout]
    x, dx = make(tuple(shape)).to(dtype), make(tuple(shape)).to(dtype)
    glu = F.glu(x, dim)
    half = list(shape)
    half[dim] //= 2
    grad_glu, dgrad_glu = make(tuple(half)).to(dtype), make(tuple(half)).to(dtype)
    grad_x = torch.ops.aten.glu_backward(grad_glu, x, dim)
    return x, dx, glu, grad_glu, dgrad_glu, grad_x


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_glu_jvp_and_backward_jvp(layout, dim):
    x, dx, glu, grad_glu, dgrad_glu, grad_x = _operands(layout, dim)
    jvp = lambda g, x_, dx_: torch.ops.aten.glu_jvp(g, x_, dx_, dim)  # noqa: E731
    expected = jvp(glu, x, dx)
    actual, dispatches = run_on_kernels(jvp, glu, x, dx)
    assert_matches(actual, expected)
    assert len(dispatches) == 1

    bjvp = lambda *t: torch.ops.aten.glu_backward_jvp(*t, dim)  # noqa: E731
    args = (grad_x, grad_glu, x, dgrad_glu, dx)
    expected = bjvp(*args)
    actual, dispatches = run_on_kernels(bjvp, *args)
    assert_matches(actual, expected)
    assert len(dispatches) == 1


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision(dtype):
    """The CPU has these ops in float only (MPS's glu takes half too): the
    reference is the CPU's float result of the same rounded inputs, rounded."""
    operands = _operands("contiguous", -1, dtype)
    x, dx, glu, grad_glu, dgrad_glu, grad_x = (t.float() for t in operands)
    expected = torch.ops.aten.glu_jvp(glu, x, dx, -1).to(dtype)
    actual, _ = run_on_kernels(lambda *t: torch.ops.aten.glu_jvp(*t, -1),
                               *(t.to(dtype) for t in (glu, x, dx)))
    assert_matches(actual, expected)
    args = (grad_x, grad_glu, x, dgrad_glu, dx)
    expected = torch.ops.aten.glu_backward_jvp(*args, -1).to(dtype)
    actual, _ = run_on_kernels(lambda *t: torch.ops.aten.glu_backward_jvp(*t, -1),
                               *(t.to(dtype) for t in args))
    assert_matches(actual, expected)


def test_forward_mode_ad_of_glu_runs_our_kernel():
    x, dx = torch.randn(5, 8), torch.randn(5, 8)
    fn = lambda x_, dx_: torch.func.jvp(lambda t: F.glu(t, -1), (x_,), (dx_,))  # noqa: E731
    expected = fn(x, dx)
    actual, dispatches = run_on_kernels(fn, x, dx)
    assert_matches(actual, expected)
    assert any(d.kernel.startswith("glu_jvp") for d in dispatches)


def test_empty_and_errors():
    x = torch.randn(0, 4)
    actual, dispatches = run_on_kernels(lambda *t: torch.ops.aten.glu_jvp(*t, 1), F.glu(x, 1), x, x)
    assert actual.shape == (0, 2) and not dispatches
    with pytest.raises(NotImplementedError):
        xi = torch.ones(2, 4, dtype=torch.int32)
        run_on_kernels(lambda *t: torch.ops.aten.glu_jvp(*t, 1), xi[:, :2], xi, xi)


@pytest.mark.skipif(mps_ops.backend == "emulator",
                    reason="2**32 half elements (8 GiB per operand): a GPU's memory, not CI's")
def test_offsets_past_2_to_the_31_take_64_bit_arithmetic():
    """Halves along dim 1 of 2 rows of 2**31 + 64 elements: the second half's
    last element lies 2**31 + 2**30 elements past its first, so the kernel
    adds offsets in 64 bits there (32 bits everywhere else). Its last
    columns against the same columns computed alone (narrow)."""
    n = 2**30 + 32
    torch.manual_seed(0)
    x = torch.randn(2, 2 * n, dtype=torch.float16, device=device())
    columns = [n - 3, n - 2, n - 1]
    small = torch.cat([x[:, columns], x[:, [n + c for c in columns]]], 1)
    with mps_ops.profile() as prof, emulate():
        glu = F.glu(x, 1)
        actual = torch.ops.aten.glu_jvp(glu, x, x, 1)[:, columns].cpu()
        expected = torch.ops.aten.glu_jvp(F.glu(small, 1), small, small, 1).cpu()
    assert any(d.op == "glu_jvp" for d in prof.dispatches)
    assert_matches(actual, expected, "glu_jvp's last columns")


# (layout, dim, shape): whether glu_jvp reads the operands two halves per word.
PAIR_CASES = [
    ("contiguous", -1, (3, 4, 12), True),    # rows of 6: words
    ("contiguous", 0, (8, 3, 6), True),      # halves along dim 0, rows of 6
    ("contiguous", -1, (3, 4, 6), False),    # rows of 3: odd
    ("contiguous", 1, (2, 4, 5), False),     # rows of 5, halves along dim 1: odd
    ("strided", -1, (3, 4, 12), False),      # every second element
    ("transposed", -1, (3, 4, 12), False),   # rows across the storage
    ("offset", -1, (3, 4, 12), False),       # rows starting at odd elements
]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("layout, dim, shape, paired", PAIR_CASES, ids=str)
def test_glu_jvp_reads_contiguous_halves_in_pairs(layout, dim, shape, paired, dtype):
    """Half and bfloat16 operands contiguous along their rows, of an even
    length from an even element, take glu_jvp_pairs; the rest the strided
    kernel. Both give the CPU's float result of the rounded inputs, rounded
    once."""
    torch.manual_seed(0)
    # Cast first: .to() of a view that is not dense makes it contiguous.
    make = {"contiguous": lambda s: torch.randn(s).to(dtype),
            "transposed": lambda s: torch.randn(s[::-1]).to(dtype).permute(2, 1, 0),
            "strided": lambda s: torch.randn(*s[:-1], 2 * s[-1]).to(dtype)[..., ::2],
            "offset": lambda s: torch.randn(s[0] * s[1] * s[2] + 1).to(dtype)[1:].view(s)}[layout]
    x, dx = make(shape), make(shape)
    # Non-finite values keep their results: sigmoid's ends, NaN through.
    x[0, 0, 0], dx[1, 0, 1] = float("inf"), float("nan")
    glu = F.glu(x.float(), dim).to(dtype)
    expected = torch.ops.aten.glu_jvp(glu.float(), x.float(), dx.float(), dim).to(dtype)
    actual, dispatches = run_on_kernels(lambda *t: torch.ops.aten.glu_jvp(*t, dim), glu, x, dx)
    assert_matches(actual, expected)
    assert [d.kernel.startswith("glu_jvp_pairs") for d in dispatches] == [paired]


def _strides_of_long_dims(t):
    return [s for s, n in zip(t.stride(), t.shape) if n > 1]


def _channels_last(shape):
    return torch.randn(shape).to(memory_format=torch.channels_last)


def _transposed(shape):
    return torch.randn(shape[::-1]).permute(*reversed(range(len(shape))))


# (x, dx, grad_x, dgrad_glu) makers over (2, 6, 3, 5), halved along dim 1:
# the CPU's glu_jvp result is laid out like glu (its iterator's where glu is
# broadcast), glu_backward_jvp's as its composite's at::cat lays it out.
@pytest.mark.parametrize("makers", [
    (_channels_last,) * 4,
    (_transposed,) * 4,
    (_channels_last, _channels_last, torch.randn, _channels_last),  # the first halves' products decide
    (_channels_last, torch.randn, torch.randn, torch.randn),
    (torch.randn, _channels_last, _channels_last, _channels_last),
], ids=["channels_last", "transposed", "grad_x_contiguous", "x_only_channels_last", "x_contiguous"])
def test_jvp_results_take_the_cpus_layout(makers):
    shape, half = (2, 6, 3, 5), (2, 3, 3, 5)
    torch.manual_seed(0)
    x, dx, grad_x, dgrad_glu = makers[0](shape), makers[1](shape), makers[2](shape), makers[3](half)
    glu = F.glu(x, 1)
    for fn, args in ((lambda *t: torch.ops.aten.glu_jvp(*t, 1), (glu, x, dx)),
                     (lambda *t: torch.ops.aten.glu_jvp(*t, 1), (glu[:1], x, dx)),  # glu broadcast
                     (lambda *t: torch.ops.aten.glu_backward_jvp(*t, 1), (grad_x, glu, x, dgrad_glu, dx))):
        expected = fn(*args)
        actual, dispatches = run_on_kernels(fn, *args)
        assert dispatches
        assert_matches(actual, expected)
        assert _strides_of_long_dims(actual) == _strides_of_long_dims(expected), (actual.stride(), expected.stride())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_backward_jvp_layout_in_half_and_bfloat16(dtype):
    """The layout replay runs in float: torch's meta kernels for half strided
    size-1 dims otherwise than the CPU, and this mix came out channels-last."""
    torch.manual_seed(7)
    x = torch.randn(1, 4, 2, 1).to(dtype)
    dx = torch.randn(1, 2, 4, 1).to(dtype).permute(3, 2, 1, 0)
    grad_x = torch.randn(1, 4, 2, 1).to(dtype)
    dgrad_glu = torch.randn(1, 2, 2, 1).to(dtype).contiguous(memory_format=torch.channels_last)
    args = (grad_x, F.glu(x.float(), 1).to(dtype), x, dgrad_glu, dx)
    fn = lambda *t: torch.ops.aten.glu_backward_jvp(*t, 1)  # noqa: E731
    expected = fn(*args)
    actual, _ = run_on_kernels(fn, *args)
    assert _strides_of_long_dims(actual) == _strides_of_long_dims(expected), (actual.stride(), expected.stride())
    torch.testing.assert_close(actual, expected, rtol=1e-2, atol=1e-2)


def test_backward_jvp_zero_dim_double_does_not_promote():
    """A 0-dim float64 dgrad_glu beside float32 operands: float32, as the
    CPU's chain of tensor ops gives (a 0-dim tensor promotes only into
    another category)."""
    x, dx, glu, grad_glu, dgrad_glu, grad_x = _operands("contiguous", 1)
    args = (grad_x, grad_glu, x, torch.tensor(0.5, dtype=torch.float64), dx)
    fn = lambda *t: torch.ops.aten.glu_backward_jvp(*t, 1)  # noqa: E731
    expected = fn(*args)
    actual, dispatches = run_on_kernels(fn, *args)
    assert dispatches and actual.dtype == expected.dtype == torch.float32
    assert_matches(actual, expected)
