"""binomial (a fill: torch 2.9 to 2.13 lack it on MPS). Its counts come
from the generator through Philox streams, so they differ from the CPU's;
the tests check the distribution (a chi-square goodness of fit against the
binomial law on both sides of the algorithms' switch at count * p = 10, for
probabilities above 1/2, where failures are counted, for counts far past
float's cancellation and for fractional counts), that a fixed seed
reproduces and the generator advances, every float dtype and layout
(broadcast included), the CPU's results at the edges (zero, negative, one,
NaN), its errors, and a tensor of more than 2**31 elements (a GPU's
memory)."""

from __future__ import annotations

import math

import pytest
import torch

import mps_ops
from distribution_checks import (
    assert_a_fixed_seed_reproduces, assert_tail_mean, binomial_law, chi_square, chi_square_bound,
)
from helpers import errors_of_cpu_and_ours, in_layout, run_on_kernels
from mps_ops.testing import device, emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"binomial"}

# (count, prob): waiting times below count * min(p, 1 - p) = 10, BTRS from
# it; failures counted above 1/2; 1e6 trials, where the CPU's log-ratio of
# Stirling terms cancels in float; a fractional count (BTRS draws from the
# law with Gamma's binomial coefficient).
LAWS = [(5.0, 0.3), (30.0, 0.2), (12.0, 0.95), (19.0, 0.5), (20.0, 0.5), (60.0, 0.75), (1000.0, 0.01),
        (1e6, 0.4), (40.5, 0.3)]


@pytest.mark.parametrize("count,prob", LAWS, ids=str)
def test_counts_follow_the_binomial_law(count, prob):
    torch.manual_seed(1)
    counts, dispatches = run_on_kernels(torch.binomial, torch.full((100_000,), count), torch.full((100_000,), prob))
    assert [d.op for d in dispatches] == ["binomial"]
    # Successes (or count less failures): whole steps from 0 or from count.
    assert bool(((counts == counts.round()) | (count - counts == (count - counts).round())).all())
    assert bool(((counts >= 0) & (counts <= count)).all())
    statistic, dof = chi_square(counts, *binomial_law(count, prob))
    assert statistic < chi_square_bound(dof), f"({count}, {prob}): chi-square {statistic:.1f} on {dof} dof"
    # The CPU's draws pass the same bound (a sanity check of the test).
    cpu = torch.binomial(torch.full((100_000,), count), torch.full((100_000,), prob))
    assert chi_square(cpu, *binomial_law(count, prob))[0] < chi_square_bound(dof)


@pytest.mark.parametrize("prob", [0.3, 0.8], ids=str)
def test_fractional_counts_below_the_switch(prob):
    """Waiting times whole trials apart fit floor(count) trials: successes
    follow the law of 7 trials for a count of 7.5; above 1/2, count less
    the failures (7.5, 6.5, ...), as the CPU's."""
    torch.manual_seed(6)
    counts, _ = run_on_kernels(torch.binomial, torch.full((100_000,), 7.5), torch.full((100_000,), prob))
    successes = counts if prob < 0.5 else 7.5 - counts
    statistic, dof = chi_square(successes, *binomial_law(7.0, min(prob, 1 - prob)))
    assert statistic < chi_square_bound(dof), f"prob {prob}: chi-square {statistic:.1f} on {dof} dof"
    cpu = torch.binomial(torch.full((100_000,), 7.5), torch.full((100_000,), prob))
    cpu_successes = cpu if prob < 0.5 else 7.5 - cpu
    assert chi_square(cpu_successes, *binomial_law(7.0, min(prob, 1 - prob)))[0] < chi_square_bound(dof)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_narrow_dtypes(dtype):
    """Counts computed in float, rounded once to the dtype (the CPU raises
    NotImplementedError for these; CUDA's kernel takes them)."""
    torch.manual_seed(2)
    laws = [(4.0, 0.5), (100.0, 0.3), (60.0, 0.9)]
    count = torch.tensor([c for c, _ in laws]).repeat_interleave(20_000).to(dtype)
    prob = torch.tensor([p for _, p in laws]).repeat_interleave(20_000).to(dtype)
    counts, _ = run_on_kernels(torch.binomial, count, prob)
    assert counts.dtype == dtype
    for i, (c, p) in enumerate(laws):
        p = float(torch.tensor(p).to(dtype))
        chunk = counts[i * 20_000:(i + 1) * 20_000].float()
        assert abs(chunk.mean().item() - c * p) <= 5 * math.sqrt(c * p * (1 - p) / 20_000), f"{dtype} {c}, {p}"


def test_the_cpus_edges():
    """The CPU's results where no draw is needed: a count <= 0 or a prob <= 0
    gives 0, a prob >= 1 the count, a NaN prob NaN."""
    count = torch.tensor([0.0, -3.0, 5.0, 5.0, 5.0, 7.5, 5.0, -2.0])
    prob = torch.tensor([0.5, 0.5, 0.0, -0.5, 1.0, 1.5, float("nan"), float("nan")])
    ours, _ = run_on_kernels(torch.binomial, count, prob)
    torch.testing.assert_close(ours, torch.binomial(count, prob), equal_nan=True, rtol=0, atol=0)


def test_nan_and_infinite_counts():
    """Where the CPU never returns (a NaN count: its loop runs forever) or
    returns garbage (an infinite count), ours gives NaN and infinity; a
    prob of 0 still gives 0 for either, as the CPU's first test does."""
    count = torch.tensor([float("nan"), float("inf"), float("inf"), float("inf"), float("nan")])
    prob = torch.tensor([0.5, 0.3, 0.8, 0.0, 1.0])
    ours, _ = run_on_kernels(torch.binomial, count, prob)
    assert math.isnan(ours[0].item()) and ours[1:3].tolist() == [math.inf, math.inf] and ours[3].item() == 0.0
    assert math.isnan(ours[4].item())


def test_a_fixed_seed_reproduces_and_the_generator_advances():
    count, prob = torch.full((1000,), 40.0), torch.full((1000,), 0.35)
    assert_a_fixed_seed_reproduces(
        lambda g: run_on_kernels(lambda c, p: torch.binomial(c, p, g), count, prob)[0])


def test_elements_draw_independent_streams():
    """Neighbouring elements' counts are uncorrelated (their streams'
    counters differ in the element)."""
    torch.manual_seed(3)
    counts, _ = run_on_kernels(torch.binomial, torch.full((20_000,), 200.0), torch.full((20_000,), 0.3))
    pairs = torch.corrcoef(torch.stack([counts[:-1], counts[1:]]))[0, 1].item()
    assert abs(pairs) < 5 / math.sqrt(20_000)


BASE_COUNT = torch.tensor([[1.0, 30.0, 0.0], [4.0, 80.0, 12.0]]).repeat(300, 1)
BASE_PROB = torch.tensor([[0.5, 0.3, 0.5], [0.0, 0.9, 0.25]]).repeat(300, 1)
LAYOUTS = {
    "transposed": lambda: (BASE_COUNT.t(), BASE_PROB.t()),
    "strided": lambda: (in_layout(BASE_COUNT, "strided"), in_layout(BASE_PROB, "strided")),
    "expanded": lambda: (BASE_COUNT[:1].expand(600, 3), BASE_PROB[:1].expand(600, 3)),
    "0-dim": lambda: (torch.tensor(60.0), torch.tensor(0.25)),
    "empty": lambda: (torch.empty(0, 3), torch.empty(0, 3)),
    # prob broadcast along count's rows, and count resized by the CPU's
    # iterator in a transposed prob's layout.
    "prob broadcast": lambda: (BASE_COUNT, BASE_PROB[0]),
    "count broadcast": lambda: (BASE_COUNT[0], BASE_PROB.t().contiguous().t()),
}


@pytest.mark.parametrize("layout", LAYOUTS.keys())
def test_layouts(layout):
    """The CPU's output shape and strides, and the law's mean per element
    wherever the operands lie."""
    count, prob = LAYOUTS[layout]()
    with pytest.warns(UserWarning, match="resized") if layout == "count broadcast" else _no_check():
        expected = torch.binomial(count, prob)
    counts, _ = run_on_kernels(torch.binomial, count, prob)
    assert counts.shape == expected.shape and counts.stride() == expected.stride()
    if counts.numel() > 1:
        count, prob = torch.broadcast_tensors(count, prob)
        assert torch.equal(counts[prob == 0], torch.zeros(int((prob == 0).sum())))
        mean, variance = (count * prob).sum().item(), (count * prob * (1 - prob)).sum().item()
        assert abs(counts.sum().item() - mean) <= 6 * math.sqrt(variance)


class _no_check:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_cpu_0_dim_prob_beside_device_counts():
    """A 0-dim CPU prob (as TensorIterator takes one) with counts on the
    device."""
    torch.manual_seed(4)
    counts, _ = run_on_kernels(lambda c: torch.binomial(c, torch.tensor(0.25)), torch.full((50_000,), 8.0))
    statistic, dof = chi_square(counts, *binomial_law(8.0, 0.25))
    assert statistic < chi_square_bound(dof)


ERRORS = {
    "integer count": lambda c, p: torch.binomial(c.long(), p),
    "integer prob": lambda c, p: torch.binomial(c, p.long()),
    "bool count": lambda c, p: torch.binomial(c.bool(), p),
    "dtypes differ": lambda c, p: torch.binomial(c, p.half()),
    "shapes differ": lambda c, p: torch.binomial(c, p[:3]),
}


@pytest.mark.parametrize("name", ERRORS.keys())
def test_errors_are_the_cpus(name):
    cpu, ours = errors_of_cpu_and_ours(ERRORS[name], torch.arange(5.0), torch.full((5,), 0.5))
    assert str(cpu) in str(ours)


def test_float64_is_refused_clearly():
    with pytest.raises(TypeError, match="binomial"):
        run_on_kernels(torch.binomial, torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64))


@pytest.mark.skipif(mps_ops.backend == "emulator", reason="2**31 + 8 counts (8 GiB, twice): a GPU's memory")
def test_past_2_to_the_31_elements():
    """2**31 + 8 elements (expanded operands, made contiguous by the stub):
    the last ones are drawn too, from the law."""
    count = torch.tensor([50.0], device=device()).expand(2**31 + 8)
    prob = torch.tensor([0.3], device=device()).expand(2**31 + 8)
    with emulate():
        counts = torch.binomial(count, prob)
    assert_tail_mean(counts, 15.0, 10.5)
