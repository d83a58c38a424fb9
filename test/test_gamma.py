"""_standard_gamma and _sample_dirichlet (fills: torch 2.9 to 2.11 lack the
first on MPS, 2.9 to 2.12 the second). Their draws come from the generator
through Philox streams, so they differ from the CPU's; the tests check the
laws (Kolmogorov-Smirnov against Gamma's distribution function, and against
the CPU's own draws for Dirichlet's shares), through the boost below
alpha = 1 and far past float's cancellation in the log test, and for
alphas so small that float's draws underflow (Dirichlet's stay in log
space); that a fixed seed reproduces and the generator advances; every float
dtype and layout; the CPU's results for zero, negative, NaN and infinite
alphas; its errors; and more than 2**31 elements (a GPU's memory)."""

from __future__ import annotations

import math

import pytest
import torch

import mps_ops
from distribution_checks import (
    assert_a_fixed_seed_reproduces, assert_tail_mean, ks_bound, ks_distance, two_sample_ks_bound,
    two_sample_ks_distance,
)
from helpers import errors_of_cpu_and_ours, in_layout, run_on_kernels
from mps_ops.testing import device, emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_standard_gamma", "_sample_dirichlet"}

SAMPLERS = {"_standard_gamma": torch._standard_gamma, "_sample_dirichlet": torch._sample_dirichlet}


@pytest.mark.parametrize("alpha", [0.1, 0.3, 1.0, 2.5, 30.0, 1e6], ids=str)
def test_gamma_draws_follow_the_law(alpha):
    torch.manual_seed(1)
    draws, dispatches = run_on_kernels(torch._standard_gamma, torch.full((100_000,), alpha))
    assert [d.op for d in dispatches] == ["standard_gamma"]
    assert bool((draws > 0).all())
    # float's underflow (the CPU's too) moves the mass below 1e-38 to its
    # smallest normal: 1.7e-4 of it at alpha = 0.1, under what KS tells
    # apart at 100,000 draws (1.3e-2 at 0.05, which it would see).
    a = torch.tensor(alpha, dtype=torch.float64)
    distance = ks_distance(draws, lambda x: torch.special.gammainc(a, x))
    assert distance < ks_bound(draws.numel()), f"alpha {alpha}: KS distance {distance:.4f}"


@pytest.mark.parametrize("alphas", [(0.5, 2.0, 7.5), (1.0, 1.0), (0.02,) * 100, (3.0,) * 40], ids=str)
def test_dirichlet_shares_follow_the_cpus_law(alphas):
    """Each share (and the largest, for many small alphas, whose draws
    underflow float) against the CPU's draws: two-sample KS. Rows of 2, 3,
    40 and 100 categories (past a SIMD group's 32 lanes)."""
    torch.manual_seed(2)
    rows = 60_000 if len(alphas) < 10 else 6_000
    alpha = torch.tensor(alphas).expand(rows, len(alphas))
    shares, dispatches = run_on_kernels(torch._sample_dirichlet, alpha)
    assert [d.op for d in dispatches] == ["sample_dirichlet"]
    cpu = torch._sample_dirichlet(alpha)
    torch.testing.assert_close(shares.double().sum(-1), torch.ones(rows, dtype=torch.float64), rtol=0,
                               atol=1e-6 * len(alphas))
    for name, ours, theirs in [("first", shares[:, 0], cpu[:, 0]), ("last", shares[:, -1], cpu[:, -1]),
                               ("largest", shares.max(-1).values, cpu.max(-1).values)]:
        distance = two_sample_ks_distance(ours, theirs)
        assert distance < two_sample_ks_bound(rows, rows), f"{alphas[:3]}: {name} share, KS distance {distance:.4f}"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("op", SAMPLERS.keys())
def test_narrow_dtypes(op, dtype):
    """Draws computed in float, rounded once to the dtype (the CPU raises
    NotImplementedError for these; CUDA's kernels take them)."""
    torch.manual_seed(3)
    alpha = torch.tensor([0.5, 2.0, 4.0]).repeat(20_000, 1).to(dtype)
    draws, _ = run_on_kernels(SAMPLERS[op], alpha)
    assert draws.dtype == dtype
    expected = alpha[0].float() / (alpha[0].float().sum() if op == "_sample_dirichlet" else 1)
    spread = draws.float().std(0)
    assert bool(((draws.float().mean(0) - expected).abs() <= 5 * spread / math.sqrt(20_000) + 1e-3).all())
    # The CPU's clamps, in the dtype.
    assert bool((draws >= torch.finfo(dtype).tiny).all())
    if op == "_sample_dirichlet":
        assert bool((draws < 1).all())


EDGE_ALPHAS = torch.tensor([[0.0, -1.0, float("nan")], [float("inf"), 1.0, 1.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


def test_gamma_edges_are_the_cpus():
    """The CPU's smallest normal for 0, negative and NaN alphas; infinity
    for an infinite one."""
    alpha = EDGE_ALPHAS.flatten()
    ours, _ = run_on_kernels(torch._standard_gamma, alpha)
    drawn = alpha == 1.0
    assert torch.equal(ours[~drawn], torch._standard_gamma(alpha)[~drawn])


def test_dirichlet_edges_are_the_cpus():
    """Rows holding 0, negative, NaN and infinite alphas: the CPU's shares
    (its clamps decide them all but the drawn row's)."""
    ours, _ = run_on_kernels(torch._sample_dirichlet, EDGE_ALPHAS)
    cpu = torch._sample_dirichlet(EDGE_ALPHAS)
    assert torch.equal(ours[[0, 2, 3]], cpu[[0, 2, 3]]) and torch.equal(ours[1], cpu[1])


def test_a_row_of_one_is_the_largest_float_below_one():
    ours, _ = run_on_kernels(torch._sample_dirichlet, torch.tensor([[2.0], [0.5]]))
    assert torch.equal(ours, torch._sample_dirichlet(torch.tensor([[2.0], [0.5]])))


@pytest.mark.parametrize("op", SAMPLERS.keys())
def test_a_fixed_seed_reproduces_and_the_generator_advances(op):
    alpha = torch.full((100, 7), 1.5)
    assert_a_fixed_seed_reproduces(lambda g: run_on_kernels(lambda a: SAMPLERS[op](a, g), alpha)[0])


def test_elements_draw_independent_streams():
    torch.manual_seed(4)
    draws, _ = run_on_kernels(torch._standard_gamma, torch.full((20_000,), 3.0))
    pairs = torch.corrcoef(torch.stack([draws[:-1], draws[1:]]))[0, 1].item()
    assert abs(pairs) < 5 / math.sqrt(20_000)


BASE = (torch.tensor([[0.5, 3.0, 1.0], [2.0, 0.7, 6.0]]) * torch.ones(300, 1, 1)).reshape(600, 3)
LAYOUTS = {
    "transposed": lambda: BASE.t(),
    "strided": lambda: in_layout(BASE, "strided"),
    "expanded": lambda: BASE[:1].expand(600, 3),
    "0-dim": lambda: torch.tensor(2.0),
    "empty": lambda: torch.empty(0, 3),
    "empty rows": lambda: torch.empty(3, 0),
}


@pytest.mark.parametrize("layout", LAYOUTS.keys())
@pytest.mark.parametrize("op", SAMPLERS.keys())
def test_layouts(op, layout):
    """The CPU's shape and strides (contiguous), and each element's law
    wherever the alphas lie: the draws' standardised sum (a Dirichlet row's
    shares covary negatively, which only narrows it)."""
    alpha = LAYOUTS[layout]()
    expected = SAMPLERS[op](alpha)
    draws, _ = run_on_kernels(SAMPLERS[op], alpha)
    assert draws.shape == expected.shape and draws.stride() == expected.stride()
    if alpha.dim() == 2 and alpha.numel() > 0:
        if op == "_sample_dirichlet":
            total = alpha.sum(-1, keepdim=True)
            mean = alpha / total
            variance = mean * (1 - mean) / (total + 1)
        else:
            mean = variance = alpha
        z = ((draws - mean) / variance.sqrt()).sum().item() / math.sqrt(alpha.numel())
        assert abs(z) < 6
    elif alpha.dim() == 0 and op == "_sample_dirichlet":
        assert torch.equal(draws, expected)


def test_rows_past_a_threadgroup():
    """Many short rows (4 lanes each, 64 rows a group of 256) and a count of
    rows that leaves the last group part-filled: every row sums to 1."""
    torch.manual_seed(5)
    shares, _ = run_on_kernels(torch._sample_dirichlet, torch.full((1001, 3), 1.2))
    torch.testing.assert_close(shares.sum(-1), torch.ones(1001), rtol=0, atol=1e-6)


@pytest.mark.parametrize("op", SAMPLERS.keys())
def test_errors_are_the_cpus(op):
    cpu, ours = errors_of_cpu_and_ours(lambda a: SAMPLERS[op](a.long()), torch.ones(2, 3))
    assert str(cpu).split(" not implemented")[0] in str(ours)


@pytest.mark.parametrize("op", SAMPLERS.keys())
def test_float64_is_refused_clearly(op):
    with pytest.raises(TypeError, match=op):
        run_on_kernels(SAMPLERS[op], torch.ones(3, dtype=torch.float64))


@pytest.mark.skipif(mps_ops.backend == "emulator", reason="2**31 + 8 draws (8 GiB): a GPU's memory")
def test_past_2_to_the_31_elements():
    alpha = torch.tensor([2.0], device=device()).expand(2**31 + 8)
    with emulate():
        draws = torch._standard_gamma(alpha)
    assert_tail_mean(draws, 2.0, 2.0)
