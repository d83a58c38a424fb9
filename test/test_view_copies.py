"""channel_shuffle, narrow_copy.out and logit_ on what OpInfo leaves out:
transposed, strided, channels-last and expanded inputs, non-contiguous out=
and in-place targets, empty inputs, and the CPU's errors."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_matches, run_on_cpu, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"channel_shuffle", "narrow_copy", "logit_"}

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
