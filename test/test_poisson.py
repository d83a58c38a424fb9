"""poisson (a fill: torch 2.9 to 2.13 lack it on MPS). Its counts come from
the generator through Philox streams, so they differ from the CPU's; the
tests check the distribution (a chi-square goodness of fit against the
Poisson law at rates on both sides of the algorithms' switch at 10 and far
past it, where a float log-probability would cancel), that a fixed seed
reproduces and the generator advances, every float dtype and layout, zero,
infinite and bad rates (the CPU's error, at the call or deferred), and a
tensor of more than 2**31 rates (a GPU's memory)."""

from __future__ import annotations

import math

import pytest
import torch

import mps_ops
from distribution_checks import (
    assert_a_fixed_seed_reproduces, assert_tail_mean, chi_square, chi_square_bound, poisson_law,
)
from helpers import errors_of_cpu_and_ours, in_layout, run_on_kernels
from mps_ops.testing import device, emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"poisson"}

RATES = [0.5, 3.0, 9.99, 10.0, 27.5, 1000.0, 1e6]


@pytest.mark.parametrize("rate", RATES, ids=str)
def test_counts_follow_the_poisson_law(rate):
    torch.manual_seed(1)
    counts, dispatches = run_on_kernels(torch.poisson, torch.full((100_000,), rate))
    assert [d.op for d in dispatches] == ["poisson"]
    assert bool((counts == counts.round()).all() and (counts >= 0).all())
    statistic, dof = chi_square(counts, *poisson_law(rate))
    assert statistic < chi_square_bound(dof), f"rate {rate}: chi-square {statistic:.1f} on {dof} dof"
    # The CPU's draws pass the same bound (a sanity check of the test).
    assert chi_square(torch.poisson(torch.full((100_000,), rate)), *poisson_law(rate))[0] < chi_square_bound(dof)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_narrow_dtypes(dtype):
    """Counts computed in float, rounded once to the dtype (bfloat16 holds
    integers exactly only to 256)."""
    torch.manual_seed(2)
    rates = torch.tensor([0.0, 2.0, 40.0]).repeat_interleave(20_000).to(dtype)
    counts, _ = run_on_kernels(torch.poisson, rates)
    assert counts.dtype == dtype
    for i, rate in enumerate((0.0, 2.0, 40.0)):
        chunk = counts[i * 20_000:(i + 1) * 20_000].float()
        assert abs(chunk.mean().item() - rate) <= 5 * math.sqrt(max(rate, 1e-3) / 20_000), f"{dtype} rate {rate}"


def test_zero_and_infinite_rates():
    """Zero rates give zero; an infinite one infinity (the CPU converts it
    to an integer: garbage)."""
    counts, _ = run_on_kernels(torch.poisson, torch.tensor([0.0, float("inf"), 0.0, 5.0]))
    assert counts[[0, 2]].tolist() == [0.0, 0.0] and counts[1].item() == float("inf")
    assert math.isfinite(counts[3].item()) and counts[3].item() == round(counts[3].item()) >= 0


def test_a_fixed_seed_reproduces_and_the_generator_advances():
    rates = torch.full((1000,), 7.0)
    assert_a_fixed_seed_reproduces(lambda g: run_on_kernels(lambda r: torch.poisson(r, g), rates)[0])


def test_elements_draw_independent_streams():
    """Neighbouring elements' counts are uncorrelated (their streams'
    counters differ in the element)."""
    torch.manual_seed(3)
    counts, _ = run_on_kernels(torch.poisson, torch.full((20_000,), 50.0))
    pairs = torch.corrcoef(torch.stack([counts[:-1], counts[1:]]))[0, 1].item()
    assert abs(pairs) < 5 / math.sqrt(20_000)


@pytest.mark.parametrize("layout", ["transposed", "strided", "expanded", "0-dim", "empty"])
def test_layouts(layout):
    """The CPU's output layout (contiguous) and the law per element
    wherever the rates lie."""
    base = torch.tensor([[1.0, 30.0, 0.0], [4.0, 0.0, 12.0]]).repeat(300, 1)
    rates = {"transposed": lambda: base.t(), "strided": lambda: in_layout(base, "strided"),
             "expanded": lambda: base[:1].expand(600, 3), "0-dim": lambda: torch.tensor(6.0),
             "empty": lambda: torch.empty(0, 3)}[layout]()
    counts, _ = run_on_kernels(torch.poisson, rates)
    expected = torch.poisson(rates)
    assert counts.shape == expected.shape and counts.stride() == expected.stride()
    if rates.numel() > 1:
        assert torch.equal(counts[rates == 0], torch.zeros(int((rates == 0).sum())))
        assert abs(counts.sum().item() - rates.sum().item()) <= 6 * math.sqrt(rates.sum().item())


ERRORS = {
    "negative rate": lambda r: torch.poisson(torch.where(r > 2, -r, r)),
    "nan rate": lambda r: torch.poisson(torch.where(r > 2, float("nan"), r)),
    "integer rates": lambda r: torch.poisson(r.long()),
}


@pytest.mark.parametrize("name", ERRORS.keys())
def test_errors_are_the_cpus(name):
    cpu, ours = errors_of_cpu_and_ours(ERRORS[name], torch.arange(5.0))
    assert str(cpu).split(" not implemented")[0] in str(ours)


def test_a_bad_rate_raises_later_with_checks_deferred():
    mps_ops.set_error_checks("deferred")
    try:
        run_on_kernels(torch.poisson, torch.tensor([1.0, -2.0]))
        with pytest.raises(RuntimeError, match="invalid Poisson rate.*deferred error check.* poisson"):
            mps_ops.check_errors()
    finally:
        mps_ops.set_error_checks("at_call")


def test_float64_is_refused_clearly():
    with pytest.raises(TypeError, match="poisson"):
        run_on_kernels(torch.poisson, torch.ones(3, dtype=torch.float64))


@pytest.mark.skipif(mps_ops.backend == "emulator", reason="2**31 + 8 counts (8 GiB): a GPU's memory")
def test_past_2_to_the_31_rates():
    """2**31 + 8 rates (an expanded one, made contiguous by the stub): the
    last ones are drawn too, from the law."""
    rates = torch.tensor([3.0], device=device()).expand(2**31 + 8)
    with emulate():
        counts = torch.poisson(rates)
    assert_tail_mean(counts, 3.0, 3.0)
