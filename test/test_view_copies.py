"""channel_shuffle, narrow_copy.out, repeat, pixel_shuffle, pixel_unshuffle
and logit_ on what OpInfo leaves out: transposed, strided, channels-last and
expanded inputs, non-contiguous out= and in-place targets, empty and 0-dim
inputs, complex inputs, gradients, more than 2**31 elements, and the CPU's
errors."""

from __future__ import annotations

import pytest
import torch

import mps_ops
from helpers import assert_matches, run_on_cpu, run_on_kernels
from mps_ops.testing import device, emulate

F = torch.nn.functional

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"channel_shuffle", "narrow_copy", "logit_", "repeat", "pixel_shuffle", "pixel_unshuffle"}

INPUTS = {
    "contiguous": lambda: torch.randn(2, 6, 5),
    "transposed": lambda: torch.randn(5, 6, 2).transpose(0, 2),
    "strided": lambda: torch.randn(2, 12, 10)[:, ::2, ::2],
    "channels_last": lambda: torch.randn(2, 6, 3, 4).to(memory_format=torch.channels_last),
    "expanded": lambda: torch.randn(1, 6, 1).expand(3, 6, 4),
}


def _check(fn, *args):
    expected = run_on_cpu(fn, *args)
    actual, dispatches = run_on_kernels(fn, *args)
    assert_matches(actual, expected)
    assert dispatches
    return actual, dispatches


@pytest.mark.parametrize("layout", list(INPUTS))
@pytest.mark.parametrize("groups", [1, 2, 3])
def test_channel_shuffle_layouts(layout, groups):
    x = INPUTS[layout]()
    actual, dispatches = _check(lambda t: torch.nn.functional.channel_shuffle(t, groups), x)
    assert len(dispatches) == 1
    # The CPU's memory format too (channels-last in, channels-last out).
    assert actual.stride() == torch.nn.functional.channel_shuffle(x, groups).stride()


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int64, torch.float16, torch.bfloat16])
def test_channel_shuffle_dtypes(dtype):
    x = (torch.randn(2, 4, 3) * 10).to(dtype)
    _check(lambda t: torch.nn.functional.channel_shuffle(t, 2), x)


def test_channel_shuffle_errors_are_the_cpus():
    fn = torch.nn.functional.channel_shuffle
    for x, groups, match in [(torch.randn(2, 6), 2, "> 2 dims"), (torch.randn(2, 6, 3), 0, "positive"),
                             (torch.randn(2, 6, 3), 4, "divisible")]:
        with pytest.raises(RuntimeError, match=match):
            fn(x, groups)
        with pytest.raises(RuntimeError, match=match):
            run_on_kernels(fn, x, groups)
    actual, dispatches = run_on_kernels(fn, torch.randn(0, 6, 3), 2)
    assert actual.shape == (0, 6, 3) and not dispatches


def _narrow_copy_into(x, out, dim, start, length):
    """narrow_copy.out into out (moved to the test device with x)."""
    returned = torch.narrow_copy(x, dim, start, length, out=out)
    assert returned is out
    return out


@pytest.mark.parametrize("layout", list(INPUTS))
@pytest.mark.parametrize("dim, start, length", [(0, 1, 1), (1, -4, 3), (-1, 0, 2), (1, 6, 0)])
def test_narrow_copy_out_layouts(layout, dim, start, length):
    x = INPUTS[layout]()

    def fn(t):
        return torch.narrow_copy(t, dim, start, length, out=torch.empty(0, dtype=t.dtype, device=t.device))

    expected = fn(x)
    actual, dispatches = run_on_kernels(fn, x)
    assert_matches(actual, expected)
    assert bool(dispatches) == (expected.numel() > 0)


def test_narrow_copy_into_a_non_contiguous_out():
    x = torch.randn(4, 7)
    expected = torch.narrow_copy(x, 1, 2, 3)
    out = torch.zeros(3, 4).t()  # (4, 3), transposed
    actual, dispatches = run_on_kernels(_narrow_copy_into, x, out, 1, 2, 3)
    assert_matches(actual, expected)
    assert dispatches


def test_narrow_copy_errors_are_the_cpus():
    x = torch.randn(2, 6, 3)
    for args, error in [((3, 0, 1), RuntimeError), ((1, 5, 2), RuntimeError), ((1, -7, 2), IndexError),
                        ((1, 0, -1), RuntimeError)]:
        with pytest.raises(error) as cpu:
            torch.narrow_copy(x, *args, out=torch.empty(0))
        with pytest.raises(error) as ours:
            run_on_kernels(_narrow_copy_into, x, torch.empty(0), *args)
        assert str(cpu.value).split("(")[0] in str(ours.value)
    with pytest.raises(RuntimeError, match="0-dim"):
        run_on_kernels(_narrow_copy_into, torch.tensor(1.0), torch.empty(0), 0, 0, 1)
    with pytest.raises(RuntimeError, match="dtype"):
        run_on_kernels(_narrow_copy_into, x, torch.empty(0, dtype=torch.int64), 1, 0, 2)


# --- repeat, pixel_shuffle, pixel_unshuffle (overrides) --------------------------

MOVES = {
    "repeat": lambda t: t.repeat(2, 1, 3, 1),
    "repeat_new_dims": lambda t: t.repeat(2, 3, 1, 1, 2),
    "pixel_shuffle": lambda t: F.pixel_shuffle(t, 2),
    "pixel_unshuffle": lambda t: F.pixel_unshuffle(t, 2),
}
MOVE_INPUTS = {
    "contiguous": lambda: torch.randn(2, 8, 6, 4),
    "transposed": lambda: torch.randn(4, 8, 6, 2).transpose(0, 3),
    "strided": lambda: torch.randn(2, 16, 12, 8)[:, ::2, ::2, ::2],
    "channels_last": lambda: torch.randn(2, 8, 6, 4).to(memory_format=torch.channels_last),
    "expanded": lambda: torch.randn(1, 8, 1, 4).expand(2, 8, 6, 4),
    "offset": lambda: torch.randn(3, 8, 6, 4)[1:],
}


@pytest.mark.parametrize("layout", list(MOVE_INPUTS))
@pytest.mark.parametrize("move", list(MOVES))
def test_moves_layouts(move, layout):
    x = MOVE_INPUTS[layout]()
    actual, dispatches = _check(MOVES[move], x)
    # pixel_shuffle into a contiguous result: one copy per sub-pixel column (2).
    copies = 2 if move == "pixel_shuffle" and layout != "channels_last" else 1
    assert [d.op for d in dispatches] == ["copy"] * copies
    # The CPU's memory format too (pixel_shuffle keeps channels-last).
    assert actual.stride() == MOVES[move](x).stride()


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                                   torch.float16, torch.bfloat16, torch.complex64])
@pytest.mark.parametrize("move", list(MOVES))
def test_moves_dtypes(move, dtype):
    x = (torch.randn(2, 8, 6, 4, dtype=torch.complex64) * 10)
    x = x if dtype.is_complex else x.real.to(dtype)
    _check(MOVES[move], x)


def test_moves_of_a_conjugate_view_show_its_values():
    x = torch.randn(2, 8, 6, 4, dtype=torch.complex64).conj()
    for move in MOVES.values():
        actual, _ = _check(move, x)
        assert not actual.is_conj()


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64, torch.complex32])
def test_repeat_takes_every_dtype_the_cpu_takes(dtype):
    x = torch.arange(6).reshape(2, 3).to(dtype) if dtype != torch.complex32 else torch.randn(2, 3).to(dtype)
    expected = x.repeat(2, 2)
    actual, dispatches = run_on_kernels(lambda t: t.repeat(2, 2), x)
    assert actual.dtype == dtype and dispatches
    assert torch.equal(actual.view(torch.uint8), expected.view(torch.uint8))


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64, torch.complex32])
@pytest.mark.parametrize("move", ["pixel_shuffle", "pixel_unshuffle"])
def test_pixel_moves_refuse_the_dtypes_the_cpu_refuses(move, dtype):
    x = torch.zeros(1, 4, 2, 2, dtype=dtype)
    with pytest.raises(NotImplementedError):
        MOVES[move](x)
    with pytest.raises(NotImplementedError, match=f"{move}.*on "):
        run_on_kernels(MOVES[move], x)
    # An empty result returns before the CPU's dtype dispatch: no error.
    actual, dispatches = run_on_kernels(MOVES[move], torch.zeros(0, 4, 2, 2, dtype=dtype))
    assert actual.shape == MOVES[move](torch.zeros(0, 4, 2, 2, dtype=dtype, device="meta")).shape
    assert not dispatches


@pytest.mark.parametrize("shape", [(0, 4, 2, 2), (2, 4, 0, 2), (2, 4, 2, 0)])
def test_pixel_unshuffle_of_an_empty_input_has_the_right_shape(shape):
    """The CPU's pixel_unshuffle returns an empty input's clone, of the
    input's shape; ours has the shape of the op's definition (torch's meta
    and composite kernels, which CUDA runs), as its pixel_shuffle does."""
    x = torch.zeros(shape)
    actual, dispatches = run_on_kernels(MOVES["pixel_unshuffle"], x)
    assert actual.shape == MOVES["pixel_unshuffle"](x.to("meta")).shape != x.shape
    assert not dispatches


@pytest.mark.parametrize("x, repeats", [(torch.tensor(2.5), ()), (torch.tensor(2.5), (3, 2)), (torch.randn(3), (0, 2)),
                                        (torch.randn(0, 3), (2, 2)), (torch.randn(3), (4,))])
def test_repeat_of_0_dim_and_empty(x, repeats):
    expected = x.repeat(repeats)
    actual, dispatches = run_on_kernels(lambda t: t.repeat(repeats), x)
    assert_matches(actual, expected)
    assert bool(dispatches) == (expected.numel() > 0)


def test_move_errors_are_the_cpus():
    for fn, x in [(lambda t: t.repeat(2), torch.randn(2, 3)), (lambda t: t.repeat(2, -1), torch.randn(2, 3)),
                  (lambda t: F.pixel_shuffle(t, 2), torch.randn(6, 2)),
                  (lambda t: F.pixel_shuffle(t, 0), torch.randn(1, 4, 2, 2)),
                  (lambda t: F.pixel_shuffle(t, 2), torch.randn(1, 6, 2, 2)),
                  (lambda t: F.pixel_unshuffle(t, -1), torch.randn(1, 4, 2, 2)),
                  (lambda t: F.pixel_unshuffle(t, 2), torch.randn(1, 4, 3, 2)),
                  (lambda t: F.pixel_unshuffle(t, 2), torch.randn(1, 4, 2, 5))]:
        with pytest.raises(RuntimeError) as cpu:
            fn(x)
        with pytest.raises(RuntimeError) as ours:
            run_on_kernels(fn, x)
        assert str(cpu.value).split("\n")[0] == str(ours.value).split("\n")[0]


@pytest.mark.parametrize("move", list(MOVES))
def test_move_gradients_are_the_cpus(move):
    """Autograd through our forward (torch's backward formulas: a sum over
    the repeats, the inverse shuffle)."""
    x = torch.randn(2, 8, 6, 4)
    weights = torch.randn(MOVES[move](x).shape)

    def gradient(t, w):
        t = t.clone().requires_grad_()
        return torch.autograd.grad((MOVES[move](t) * w).sum(), t)[0]

    expected = gradient(x, weights)
    actual, dispatches = run_on_kernels(gradient, x, weights)
    assert_matches(actual, expected)
    assert dispatches


@pytest.mark.skipif(mps_ops.backend == "emulator", reason="2**31 + 2**16 one-byte elements: a GPU's memory")
def test_moves_past_2_to_the_31_elements():
    """Results of more than 2**31 elements (the copy splits into 32-bit
    indexable pieces), against torch's own kernels on the same device."""
    row = torch.arange(256, dtype=torch.uint8, device=device())
    with emulate():
        repeated = row.repeat(2**23 + 1)
    assert repeated.numel() == 2**31 + 256
    assert torch.equal(repeated.view(-1, 256), row.expand(2**23 + 1, 256))
    del repeated
    x = torch.randint(0, 256, (1, 4, 2**14, 2**15 + 1), dtype=torch.uint8, device=device())
    expected = F.pixel_shuffle(x, 2)
    with emulate():
        actual = F.pixel_shuffle(x, 2)
    assert torch.equal(actual, expected)
    del actual, expected
    with emulate():
        back = F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2)
    assert torch.equal(back, x)


# --- logit_ ---------------------------------------------------------------------

SPECIAL_VALUES = torch.tensor([0.0, 0.25, 0.5, 1.0, 2.0, -1.0, float("nan"), 1e-30, 1 - 1e-7])


@pytest.mark.parametrize("eps", [None, 0.0, 0.1, 0.6, -0.5])
def test_logit_inplace_special_values(eps):
    _check(lambda t: t.logit_(eps), SPECIAL_VALUES.clone())


@pytest.mark.parametrize("layout", ["transposed", "strided"])
def test_logit_inplace_non_contiguous_self(layout):
    base = torch.rand(8, 10)
    make = {"transposed": lambda b: b.t(), "strided": lambda b: b[:, ::2]}[layout]

    def call(b):
        view = make(b)
        returned = view.logit_(1e-3)
        assert returned is view
        return b  # the untouched elements between the strided ones included

    _, dispatches = _check(call, base.clone())
    assert dispatches[0].variant == ("dense" if layout == "transposed" else "strided")


def test_logit_inplace_errors_and_empty():
    with pytest.raises(RuntimeError, match="can't be cast"):
        run_on_kernels(lambda t: t.logit_(), torch.arange(3))
    actual, dispatches = run_on_kernels(lambda t: t.logit_(), torch.empty(0, 3))
    assert actual.shape == (0, 3) and not dispatches
