"""logspace.out against the CPU beyond OpInfo's few steps: long runs (float32
accuracy against float64 truth), exact integer powers (to 2**48, and powers of
two to int64's range),
negative and zero bases, non-contiguous and reshaped outs, and the CPU's
errors."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

from helpers import assert_matches, run_on_kernels, to_device
from mps_ops.testing import device, emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"logspace"}


def _logspace_on_kernels(*args, **kwargs):
    """torch.logspace on our kernels, made on the test device (a factory has
    no tensor argument to take it from)."""
    return run_on_kernels(torch.logspace, *args, device=device(), **kwargs)


def _logspace_into(out, start, end, steps, base):
    returned = torch.logspace(start, end, steps, base, out=out)
    assert returned is out
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("start, end, steps, base", [
    (-5.0, 5.0, 1001, 10.0), (-30.0, 30.0, 257, 2.0), (0.5, -2.5, 99, 7.5), (-3.0, 3.0, 64, 0.25),
])
def test_long_float_runs(dtype, start, end, steps, base):
    expected = torch.logspace(start, end, steps, base, dtype=dtype)
    actual, dispatches = _logspace_on_kernels(start, end, steps, base, dtype=dtype)
    assert dispatches
    assert_matches(actual, expected)
    if dtype == torch.float32:
        truth = torch.logspace(start, end, steps, base, dtype=torch.float64)
        assert ((actual.double() - truth).abs() / truth).max() < 4e-7  # a few float ulps


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8])
@pytest.mark.parametrize("start, end, steps, base", [
    (0, 62, 63, 2.0), (0, 18, 19, 10.0), (0, 39, 40, 3.0), (-4, 4, 9, 2.0), (0, 9, 10, -3.0),
    (-3, 4, 4, 3.0), (1, 3, 7, 10.0), (0, 5, 6, 0.5), (2, 5, 4, 0.0), (0, 7, 5, 1.1),
])
def test_integer_powers_are_exact(dtype, start, end, steps, base):
    info = torch.iinfo(dtype)
    # The CPU takes start and end in the dtype (-4 is 252 in uint8), and
    # beyond the dtype's range its double-to-integer conversion is undefined
    # (x86 gives 0 where a GPU, and an Arm CPU, saturates).
    wrapped = [torch.tensor(v).to(dtype).item() for v in (start, end)]
    expected = torch.logspace(*wrapped, steps, base, dtype=torch.float64)
    keep = (expected >= info.min) & (expected <= info.max)
    if base not in (2.0, 0.5):
        # Double-float carries 48 bits: larger powers of other bases differ in
        # their low bits (the CPU's own are rounded to double's 53 beyond 2**53).
        keep &= expected.abs() < 2**48
    expected = torch.logspace(start, end, steps, base, dtype=dtype)
    actual, dispatches = _logspace_on_kernels(start, end, steps, base, dtype=dtype)
    assert dispatches
    assert torch.equal(actual[keep], expected[keep])


@pytest.mark.parametrize("base", [2.0, 3.0, 7.0, 10.0, 100.0, 0.5, 1.5])
@pytest.mark.parametrize("end, steps", [(4, 197), (3, 300), (2, 301), (5, 64)])
def test_integer_sweep(base, end, steps):
    """Truncated powers along a sweep match the CPU's, and exactly integral
    results (100 ** 0.5) are exact. One known difference: where the exact
    exponent is an integer k but the CPU's double exponent falls an ulp
    short of it, the CPU truncates base ** k - epsilon to base ** k - 1;
    ours is base ** k."""
    expected = torch.logspace(0, end, steps, base, dtype=torch.int64)
    actual, dispatches = _logspace_on_kernels(0, end, steps, base, dtype=torch.int64)
    assert dispatches
    for i in (actual != expected).nonzero().flatten().tolist():
        exponent = Fraction(end * i, steps - 1)
        assert exponent.denominator == 1, (i, actual[i], expected[i])
        assert actual[i] == int(Fraction(base) ** exponent.numerator) == expected[i] + 1


def test_special_values():
    # 10 ** -39 .. 10 ** -45 are float32 subnormals: not via 10 ** 39 = inf.
    for args, kwargs in (((-39, -45, 7), {}), ((float("nan"), 1, 2), {"base": 1.0}),
                         ((1, 2, 3), {"base": -2.0}), ((0, 1, 3), {"base": 100.0, "dtype": torch.int64})):
        expected = torch.logspace(*args, **kwargs)
        actual, _ = _logspace_on_kernels(*args, **kwargs)
        torch.testing.assert_close(actual, expected, rtol=1e-6, atol=0, equal_nan=True)


def test_one_step_overflow_raises_like_the_cpu():
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.logspace(3, 3, 1, dtype=torch.int8)
    with pytest.raises(RuntimeError, match="without overflow"):
        _logspace_on_kernels(3, 3, 1, dtype=torch.int8)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64])
def test_integer_outputs_where_the_power_is_not_a_number_or_overflows(dtype):
    """A negative base's fractional powers (NaN) and powers past the
    conversion's range take the CPU's conversion there (x86's integer
    indefinite), not uninitialised bits."""
    for args in ((1, 3, 5, -2.0), (8, 12, 5, 10.0), (-3, 40, 44, 10.0)):
        expected = torch.logspace(*args, dtype=dtype)
        actual, dispatches = _logspace_on_kernels(*args, dtype=dtype)
        assert dispatches and torch.equal(actual, expected), (args, actual, expected)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float16, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("start, end", [(-1.5, 3), (2, -1.5), (300, 2), (5, 300)])
@pytest.mark.parametrize("steps", [0, 1])
def test_start_and_end_are_converted_only_from_two_steps(dtype, start, end, steps):
    """The CPU converts start and end to the output type (raising where they
    overflow it) only from two steps on; one step fills base ** start, as a
    one-element fill_: checked, except into half and bfloat16 (inf)."""
    try:
        expected = torch.logspace(start, end, steps, 10.0, dtype=dtype)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="without overflow"):
            _logspace_on_kernels(start, end, steps, 10.0, dtype=dtype)
        return
    actual, _ = _logspace_on_kernels(start, end, steps, 10.0, dtype=dtype)
    assert_matches(actual, expected)


@pytest.mark.parametrize("steps", [0, 1, 2])
def test_few_steps(steps):
    expected = torch.logspace(2.5, -1, steps, 3.0)
    actual, _ = _logspace_on_kernels(2.5, -1, steps, 3.0)
    assert_matches(actual, expected)
    int_expected = torch.logspace(2.5, -1, steps, 10.0, dtype=torch.int32)
    int_actual, _ = _logspace_on_kernels(2.5, -1, steps, 10.0, dtype=torch.int32)
    assert torch.equal(int_actual, int_expected)


@pytest.mark.parametrize("make_out", [
    lambda: torch.zeros(40)[::2],                   # strided: written through a copy
    lambda: torch.zeros(4, 5),                      # same numel: the CPU keeps the shape
    lambda: torch.zeros(4, 5).t(),
    lambda: torch.zeros(7),                         # other numel: resized to (steps,)
])
def test_out_layouts(make_out):
    expected = _logspace_into(make_out(), -2.0, 2.0, 20, 5.0)
    actual, dispatches = run_on_kernels(_logspace_into, make_out(), -2.0, 2.0, 20, 5.0)
    assert dispatches
    assert actual.shape == expected.shape and actual.stride() == expected.stride()
    assert_matches(actual, expected)


@pytest.mark.parametrize("dtype, steps", [
    (torch.float32, -1),   # negative steps
    (torch.bool, 4),       # not dispatched on the CPU
    (torch.uint16, 4),
])
def test_errors_are_the_cpus(dtype, steps):
    with pytest.raises(Exception) as cpu_error:
        torch.logspace(0, 1, steps, out=torch.empty(0, dtype=dtype))
    out = to_device(torch.empty(0, dtype=dtype))
    with pytest.raises(Exception) as our_error, emulate():
        torch.logspace(0, 1, steps, out=out)
    assert type(our_error.value) is type(cpu_error.value)
    assert "logspace" in str(our_error.value) or "steps" in str(our_error.value)


def test_float64_is_refused():
    out = to_device(torch.empty(0, dtype=torch.float64))
    with pytest.raises(TypeError, match="logspace.*float64"), emulate():
        torch.logspace(0, 1, 4, out=out)
