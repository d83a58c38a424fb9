"""cauchy_, log_normal_ and geometric_ (fills: torch 2.9 and 2.10 lack them
on MPS). Their draws come from the generator through Philox streams, so
they differ from the CPU's; the tests check the laws (Kolmogorov-Smirnov
against the distribution functions, chi-square for geometric's counts),
that a fixed seed reproduces and the generator advances, every dtype and
layout (written in place), the functional forms, the CPU's errors in its
order, and more than 2**31 elements (a GPU's memory)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import mps_ops
from distribution_checks import (
    assert_a_fixed_seed_reproduces, assert_tail_mean, chi_square, chi_square_bound, ks_bound,
    ks_distance, two_sample_ks_bound, two_sample_ks_distance,
)
from helpers import errors_of_cpu_and_ours, run_on_kernels
from mps_ops.testing import device, emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"cauchy_", "log_normal_", "geometric_"}

N = 100_000

# The kernel's elements a thread (e), for the test that pairs its normals.
ELEMENTS_A_THREAD = int(re.search(r"random_fill_elements = (\d+) };", (
    Path(__file__).parents[1] / "csrc" / "kernels" / "random_fills_params.h").read_text()).group(1))


def _normal_cdf(x):
    return 0.5 * torch.special.erfc(-x / math.sqrt(2))


LAWS = {
    "cauchy": (lambda t: t.cauchy_(0.5, 2.0), lambda x: 0.5 + torch.atan((x - 0.5) / 2.0) / math.pi),
    "log_normal": (lambda t: t.log_normal_(0.5, 0.75), lambda x: _normal_cdf((x.log() - 0.5) / 0.75)),
}


@pytest.mark.parametrize("law", LAWS.keys())
def test_continuous_draws_follow_the_law(law):
    torch.manual_seed(1)
    fill, cdf = LAWS[law]
    draws, dispatches = run_on_kernels(fill, torch.empty(N))
    assert [d.op for d in dispatches] == [law]
    distance = ks_distance(draws, cdf)
    assert distance < ks_bound(N), f"{law}: KS distance {distance:.4f}"
    # The CPU's draws pass the same bound (a sanity check of the test).
    assert ks_distance(fill(torch.empty(N)), cdf) < ks_bound(N)


def test_cauchy_draws_are_tan_of_their_uniform_to_3_ulps():
    """Each standard Cauchy draw t is tan(pi (u - 1/2)) for its open uniform
    u = (2m + 1) 2**-24 within 3 ulps, far tails included: u is recovered
    from t (atan, then the nearest such odd multiple: a wrong recovery only
    shows a larger error) and the exact value taken in float64. The CPU's
    formula evaluated in float (our kernel's before: tan of the rounded
    float pi (u - 1/2)) is off by up to 100% there."""
    torch.manual_seed(5)
    draws, dispatches = run_on_kernels(lambda t: t.cauchy_(), torch.empty(1 << 22))
    assert [d.op for d in dispatches] == ["cauchy"]
    draws = draws.double()
    odd = torch.round((torch.atan(draws) / math.pi + 0.5) * 2**23 - 0.5)
    exact = torch.tan(math.pi * ((2 * odd + 1) * 2.0**-24 - 0.5))
    spacing = torch.from_numpy(np.spacing(exact.abs().float().numpy())).double()
    ulps = (draws - exact).abs() / spacing
    assert ulps.max() <= 3.0, f"{ulps.max():.1f} ulps at {draws[ulps.argmax()]:.9g}"
    assert draws.abs().max() > 1e6  # the far tails were drawn


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_log_normal_normals_come_in_pairs_at_uniform_angles(dtype):
    """Box and Muller's pairs, as the kernel lays them out (a thread's e
    draws a grid of n / e apart, pairs (0, 1), (2, 3), ...): their angle is
    uniform over the circle (chi-square over 16 sectors) and their squared
    radius exponential with mean 2. A quadrant turned the wrong way keeps
    each normal's own law but not the pair's. Half takes the fast angle
    (half's rounding moves log(draw) by 2**-11 at most)."""
    torch.manual_seed(6)
    n = 1 << 20
    draws, dispatches = run_on_kernels(lambda t: t.log_normal_(0.0, 1.0), torch.empty(n, dtype=dtype))
    assert [d.op for d in dispatches] == ["log_normal"]
    z = draws.double().log().view(ELEMENTS_A_THREAD, n // ELEMENTS_A_THREAD)
    first, second = z[0::2].flatten(), z[1::2].flatten()
    sectors = ((torch.atan2(second, first) / (2 * math.pi) + 0.5) * 16).long().clamp(0, 15)
    statistic, dof = chi_square(sectors, torch.arange(16, dtype=torch.float64),
                                torch.full((16,), -math.log(16), dtype=torch.float64))
    assert statistic < chi_square_bound(dof)
    radius2 = first**2 + second**2
    assert ks_distance(radius2, lambda r: 1 - torch.exp(-r / 2)) < ks_bound(radius2.numel())


def _geometric_law(p):
    ks = torch.arange(1, int(40 / p) + 2, dtype=torch.float64)
    return ks, (ks - 1) * math.log1p(-p) + math.log(p)


@pytest.mark.parametrize("p,dtype", [(0.3, torch.float32), (0.02, torch.float32), (0.999, torch.float32),
                                     (0.02, torch.int64), (0.05, torch.uint8), (0.3, torch.int8),
                                     (0.3, torch.float16), (0.1, torch.bfloat16)], ids=str)
def test_geometric_counts_follow_the_law(p, dtype):
    """Trials up to the first success, in every kind of dtype (uint8's
    largest, 255, lies past p = 0.05's 1e-5 quantile, int8's 127 past
    p = 0.3's: no saturation to speak of; bfloat16 holds counts exactly to
    256, past p = 0.1's 1e-11 quantile)."""
    torch.manual_seed(2)
    counts, dispatches = run_on_kernels(lambda t: t.geometric_(p), torch.empty(N, dtype=dtype))
    assert [d.op for d in dispatches] == ["geometric"] and counts.dtype == dtype
    statistic, dof = chi_square(counts, *_geometric_law(p))
    assert statistic < chi_square_bound(dof), f"p {p} {dtype}: chi-square {statistic:.1f} on {dof} dof"
    assert chi_square(torch.empty(N).geometric_(p), *_geometric_law(p))[0] < chi_square_bound(dof)


def test_integer_counts_past_the_range_saturate():
    """A count past the dtype's range is its largest value (the CPU's
    conversion gives garbage: int32's smallest value here)."""
    counts, _ = run_on_kernels(lambda t: t.geometric_(1e-12), torch.empty(1000, dtype=torch.int32))
    assert bool((counts == torch.iinfo(torch.int32).max).float().mean() > 0.99)
    counts, _ = run_on_kernels(lambda t: t.geometric_(0.001), torch.empty(1000, dtype=torch.int8))
    assert bool((counts == 127).float().mean() > 0.8) and bool((counts >= 1).all())


def test_a_tiny_p_gives_infinity_in_float():
    """p below float's smallest normal: counts past float's range, as the
    CPU's (its double count converted); no division by a flushed zero."""
    counts, _ = run_on_kernels(lambda t: t.geometric_(1e-45), torch.empty(100))
    assert torch.equal(counts, torch.empty(100).geometric_(1e-45))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_narrow_dtypes(dtype):
    torch.manual_seed(3)
    draws, _ = run_on_kernels(lambda t: t.log_normal_(0.0, 0.5), torch.empty(N, dtype=dtype))
    assert draws.dtype == dtype
    distance = ks_distance(draws.float(), lambda x: _normal_cdf(x.log() / 0.5))
    # Rounding to the dtype moves each draw by up to half an ulp (bfloat16:
    # 2**-8 relative): the distance allows for it.
    assert distance < ks_bound(N) + (0.02 if dtype == torch.bfloat16 else 0.003)


def test_bfloat16_keeps_its_subnormal_draws():
    """Draws under float's smallest normal (e**-87.3) are bfloat16
    subnormals, not 0 (a fast exp flushes them: the kernel shifts them into
    its range); their law is the CPU's, rounded alike."""
    torch.manual_seed(4)
    draws, _ = run_on_kernels(lambda t: t.log_normal_(-90.0, 2.0), torch.empty(N, dtype=torch.bfloat16))
    expected = torch.empty(N, dtype=torch.bfloat16).log_normal_(-90.0, 2.0)
    assert (draws < torch.finfo(torch.float32).tiny).float().mean() > 0.5
    assert two_sample_ks_distance(draws.float(), expected.float()) < two_sample_ks_bound(N, N)


FILLS = {"cauchy_": lambda t: t.cauchy_(), "log_normal_": lambda t: t.log_normal_(), "geometric_": lambda t: t.geometric_(0.4)}


@pytest.mark.parametrize("op", FILLS.keys())
def test_a_fixed_seed_reproduces_and_the_generator_advances(op):
    fill = {"cauchy_": lambda t, g: t.cauchy_(generator=g),
            "log_normal_": lambda t, g: t.log_normal_(generator=g),
            "geometric_": lambda t, g: t.geometric_(0.4, generator=g)}[op]
    assert_a_fixed_seed_reproduces(
        lambda g: run_on_kernels(lambda t: fill(t, g), torch.empty(1000))[0])


LAYOUTS = {
    "transposed": lambda: torch.zeros(600, 3, device=device()).t(),
    "strided": lambda: torch.zeros(600, 6, device=device())[:, ::2],  # zero gaps, which must stay zero
    "0-dim": lambda: torch.tensor(0.0, device=device()),
    "empty": lambda: torch.empty(0, 3, device=device()),
}


@pytest.mark.parametrize("layout", LAYOUTS.keys())
@pytest.mark.parametrize("op", FILLS.keys())
def test_layouts(op, layout):
    """Written in place wherever self lies: every element drawn (a strided
    view's gaps untouched), self returned."""
    torch.manual_seed(4)
    target = LAYOUTS[layout]()  # made on the device: .to() would make a strided view dense
    strides = target.stride()
    with emulate():
        result = FILLS[op](target)
    assert result.data_ptr() == target.data_ptr() and result.stride() == strides
    drawn = target.cpu()
    if drawn.numel() > 1:
        assert bool((drawn != 0).all()) and drawn.unique().numel() > 5
    if layout == "strided":
        whole = target.as_strided((target.untyped_storage().nbytes() // 4,), (1,), 0).cpu()
        assert int((whole != 0).sum()) == drawn.numel()


def test_distributions_cauchy_samples_through_the_fill():
    """torch.distributions.Cauchy's sample() calls cauchy_ (LogNormal's and
    Geometric's go through normal and uniform draws instead)."""
    torch.manual_seed(6)
    with emulate(), mps_ops.profile() as prof:
        torch.distributions.Cauchy(torch.zeros(10, device=device()), torch.ones(10, device=device())).sample()
    assert "cauchy" in {d.op for d in prof.dispatches}


ERRORS = {
    "cauchy sigma 0": lambda t: t.cauchy_(0.0, 0.0),
    "cauchy sigma nan before the dtype": lambda t: t.int().cauchy_(0.0, float("nan")),
    "cauchy integer": lambda t: t.int().cauchy_(),
    "cauchy empty integer": lambda t: t[:0].int().cauchy_(),
    "log_normal std 0": lambda t: t.log_normal_(1.0, 0.0),
    "log_normal integer": lambda t: t.long().log_normal_(),
    "log_normal complex": lambda t: t.to(torch.complex64).log_normal_(),
    "geometric p 0": lambda t: t.geometric_(0.0),
    "geometric p 1 before the dtype": lambda t: t.bool().geometric_(1.0),
    "geometric p nan": lambda t: t.geometric_(float("nan")),
    "geometric bool": lambda t: t.bool().geometric_(0.5),
    "geometric complex": lambda t: t.to(torch.complex64).geometric_(0.5),
    "geometric uint16": lambda t: t.to(torch.uint16).geometric_(0.5),
}


@pytest.mark.parametrize("name", ERRORS.keys())
def test_errors_are_the_cpus(name):
    cpu, ours = errors_of_cpu_and_ours(ERRORS[name], torch.zeros(5))
    assert str(cpu).split(" not implemented")[0] in str(ours)


@pytest.mark.parametrize("op", ["log_normal_", "geometric_"])
def test_an_empty_tensor_of_a_dtype_the_cpu_lacks_returns_as_the_cpus(op):
    """(cauchy_ checks an empty tensor's dtype too: test_errors_are_the_cpus.)"""
    empty = torch.empty(0, dtype=torch.bool)
    FILLS[op](empty)
    result, dispatches = run_on_kernels(FILLS[op], empty)
    assert result.shape == (0,) and dispatches == []


@pytest.mark.parametrize("op", FILLS.keys())
def test_float64_is_refused_clearly(op):
    with pytest.raises(TypeError, match=op):
        run_on_kernels(FILLS[op], torch.zeros(3, dtype=torch.float64))


@pytest.mark.skipif(mps_ops.backend == "emulator", reason="2**31 + 8 draws (8 GiB): a GPU's memory")
def test_past_2_to_the_31_elements():
    target = torch.empty(2**31 + 8, device=device())
    with emulate():
        target.geometric_(0.25)
    assert_tail_mean(target, 4.0, 12.0)
