"""_assert_async and _assert_async.msg (fill ops: torch 2.9 to 2.12 lack them
on MPS) against the CPU: every dtype (complex too), zero and nonzero values
(-0.0 is zero; NaN, infinities and subnormals are not), the messages, the
CPU's errors for no value or several, one-element views, and the deferred
mode, where a zero raises at the next check instead of at the call."""

from __future__ import annotations

import pytest
import torch

import mps_ops
from helpers import errors_of_cpu_and_ours, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere): the one-element
# views below.
LAYOUTS_TESTED_HERE = {"_assert_async"}

CALLS = {
    "plain": torch._assert_async,
    "message": lambda t: torch._assert_async(t, "the mask must not be empty"),
    "empty message": lambda t: torch._assert_async(t, ""),
}

INTEGER_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint16,
                  torch.uint32, torch.uint64]
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32]


def _values(dtype):
    """(value, label) pairs: zero and nonzero values of dtype."""
    if dtype == torch.bool:
        return [(torch.tensor(False), "false"), (torch.tensor(True), "true")]
    if not (dtype.is_floating_point or dtype.is_complex):
        info = torch.iinfo(dtype)
        return [(torch.tensor(0, dtype=dtype), "zero"), (torch.tensor(1, dtype=dtype), "one"),
                (torch.tensor(info.max, dtype=dtype), "max"), (torch.tensor(info.min, dtype=dtype), "min")]
    if dtype.is_complex:
        return [(torch.tensor(0j, dtype=dtype), "zero"), (torch.tensor(-0.0 - 0.0j, dtype=dtype), "negative zeros"),
                (torch.tensor(1j, dtype=dtype), "imaginary"), (torch.tensor(2 + 0j, dtype=dtype), "real"),
                (torch.tensor(complex(float("nan"), 0.0), dtype=dtype), "nan")]
    tiny = torch.finfo(dtype).tiny
    return [(torch.tensor(0.0, dtype=dtype), "zero"), (torch.tensor(-0.0, dtype=dtype), "negative zero"),
            (torch.tensor(1.5, dtype=dtype), "one and a half"), (torch.tensor(float("nan"), dtype=dtype), "nan"),
            (torch.tensor(float("-inf"), dtype=dtype), "-inf"),
            (torch.tensor(tiny / 4, dtype=dtype), "subnormal"), (torch.tensor(-tiny / 4, dtype=dtype), "-subnormal")]


def _outcome(call, *args, ours):
    """What call raised (type and message), or None."""
    try:
        if ours:
            _, dispatches = run_on_kernels(call, *args)
            assert [d.op for d in dispatches] == ["assert_nonzero"]
        else:
            call(*args)
    except RuntimeError as error:
        return type(error), str(error)
    return None


# Values the CPU gets wrong (torch 2.13): its is_nonzero reads a uint64
# above int64's range through a Scalar and raises RuntimeError ("value
# cannot be converted to type int64_t without overflow"); it is nonzero.
CPU_WRONG = {(torch.uint64, "max")}


@pytest.mark.parametrize("call", CALLS.keys())
@pytest.mark.parametrize("dtype", INTEGER_DTYPES + FLOAT_DTYPES + [torch.complex64], ids=str)
def test_zero_raises_what_the_cpu_raises(dtype, call):
    for value, label in _values(dtype):
        expected = _outcome(CALLS[call], value, ours=False)
        if (dtype, label) in CPU_WRONG:
            assert expected is not None, f"{dtype} {label}: the CPU's answer is right now"
            expected = None
        assert _outcome(CALLS[call], value, ours=True) == expected, f"{dtype} {label}"


def test_the_values_reach_both_outcomes():
    """The cases above hold zeros and nonzeros for every dtype (a sweep
    that never raised, or always did, would prove nothing)."""
    for dtype in INTEGER_DTYPES + FLOAT_DTYPES + [torch.complex64]:
        outcomes = {_outcome(torch._assert_async, v, ours=False) is None for v, _ in _values(dtype)}
        assert outcomes == {True, False}, dtype


@pytest.mark.parametrize("view", ["element of a row", "expanded", "transposed", "conjugate", "3-D"])
def test_one_element_views(view):
    """The one value wherever it lies in its storage."""
    base = torch.tensor([[3.0, 0.0, 2.0], [0.0, 5.0, 0.0]])
    make = {
        "element of a row": lambda: [(base[1, 1], "5"), (base[1, 2], "0")],
        "expanded": lambda: [(base[0, 1:2].expand(1, 1), "0"), (base[1, 1:2].expand(1, 1), "5")],
        "transposed": lambda: [(base[:1, 1:2].t(), "0"), (base[1:, 1:2].t(), "5")],
        "conjugate": lambda: [(torch.tensor([1j, 0j])[1:].conj(), "0"), (torch.tensor([1j, 0j])[:1].conj(), "1j")],
        "3-D": lambda: [(base[1, 1:2].reshape(1, 1, 1), "5"), (base[1, 2:].reshape(1, 1, 1), "0")],
    }[view]
    for value, label in make():
        assert _outcome(torch._assert_async, value, ours=True) == _outcome(torch._assert_async, value, ours=False), \
            f"{view} {label}"


@pytest.mark.parametrize("shape", [(0,), (2,), (1, 0), (3, 1)], ids=str)
@pytest.mark.parametrize("call", CALLS.keys())
def test_no_value_or_several_raise_the_cpus_error(shape, call):
    cpu, ours = errors_of_cpu_and_ours(CALLS[call], torch.ones(shape))
    assert str(ours) == str(cpu)


def test_float64_is_refused_clearly():
    """(One dimension: a 0-dim CPU tensor is an operand's value, bound on
    the host; emulated tensors are CPU tensors.)"""
    with pytest.raises(TypeError, match="_assert_async"):
        run_on_kernels(torch._assert_async, torch.tensor([1.0], dtype=torch.float64))


def test_deferred_a_zero_raises_at_the_next_check():
    """With checks deferred the call returns, and check_errors raises the
    call's error naming the op; a nonzero value leaves nothing to raise."""
    mps_ops.set_error_checks("deferred")
    try:
        run_on_kernels(torch._assert_async, torch.tensor(2.0))
        run_on_kernels(lambda t: torch._assert_async(t, "mask is empty"), torch.tensor(0))
        with pytest.raises(RuntimeError, match=r"mask is empty .*deferred error check.* _assert_async\.msg"):
            mps_ops.check_errors()
        run_on_kernels(torch._assert_async, torch.tensor(1))
        mps_ops.check_errors()
    finally:
        mps_ops.set_error_checks("at_call")
