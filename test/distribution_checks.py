"""Goodness of fit of samples against a law, for the samplers' tests
(poisson, binomial, the Gamma samplers): their draws come from Philox
streams, so they are compared with the law (or with the CPU's draws as a
sample of it), not with the CPU's draws one by one. Each bound is passed
but with probability about 1e-6, fixed seeds making each test
deterministic. Also the two checks every sampler's tests make: that a
fixed seed reproduces, and the law's mean far past 2**31 elements."""

from __future__ import annotations

import math

import torch

from mps_ops.testing import device


def chi_square(samples, ks, log_pmf):
    """The statistic and degrees of freedom of samples against the law
    whose log-probabilities at the counts ks (float64) are log_pmf: bins of
    expected count 5 or more, the rest (including counts outside ks)
    merged into one, where the law leaves the rest any probability."""
    values = samples.flatten().double()
    expected = torch.exp(log_pmf) * values.numel()
    keep = expected >= 5
    kept_ks = ks[keep]
    # (Counts may be non-integers: a binomial's failures of a fractional count.)
    index = torch.searchsorted(kept_ks, values).clamp(max=max(kept_ks.numel() - 1, 0))
    hit = kept_ks[index] == values
    observed = torch.bincount(index[hit], minlength=kept_ks.numel()).double()
    expected = expected[keep]
    rest_observed, rest_expected = values.numel() - observed.sum(), values.numel() - expected.sum()
    if rest_expected > 1e-6:
        observed = torch.cat([observed, rest_observed.reshape(1)])
        expected = torch.cat([expected, rest_expected.reshape(1)])
    elif rest_observed > 0:  # every bin kept: a sample outside them is impossible
        return math.inf, observed.numel() - 1
    return ((observed - expected) ** 2 / expected).sum().item(), observed.numel() - 1


def chi_square_bound(dof):
    """chi_square's bound (Wilson-Hilferty)."""
    z = 4.75
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


def poisson_law(rate):
    """(ks, log p(k)) over the counts within 6 standard deviations of rate."""
    spread = 6 * math.sqrt(rate) + 3
    ks = torch.arange(max(0, int(rate - spread)), int(rate + spread) + 1, dtype=torch.float64)
    return ks, -rate + ks * math.log(rate) - torch.lgamma(ks + 1)


def binomial_law(count, prob):
    """(ks, log p(k)) over the counts within 6 standard deviations of the
    mean (count may be a non-integer: Gamma's binomial coefficient)."""
    mean, spread = count * prob, 6 * math.sqrt(count * prob * (1 - prob)) + 3
    ks = torch.arange(max(0, int(mean - spread)), int(min(count, mean + spread)) + 1, dtype=torch.float64)
    n = torch.tensor(float(count), dtype=torch.float64)
    return ks, (torch.lgamma(n + 1) - torch.lgamma(ks + 1) - torch.lgamma(n - ks + 1) + ks * math.log(prob)
                + (n - ks) * math.log1p(-prob))


# Kolmogorov's c(alpha) at alpha = 1e-6: sqrt(-log(alpha / 2) / 2).
KOLMOGOROV_1E6 = math.sqrt(-math.log(0.5e-6) / 2)


def ks_distance(samples, cdf):
    """The largest gap between the samples' empirical distribution and cdf
    (a float64 function of float64 values)."""
    x = torch.sort(samples.flatten().double()).values
    n = x.numel()
    f = cdf(x)
    steps = torch.arange(1, n + 1, dtype=torch.float64) / n
    return max((steps - f).max().item(), (f - (steps - 1 / n)).max().item())


def ks_bound(n):
    return KOLMOGOROV_1E6 / math.sqrt(n)


def two_sample_ks_distance(a, b):
    """The largest gap between two samples' empirical distributions."""
    a, b = torch.sort(a.flatten().double()).values, torch.sort(b.flatten().double()).values
    points = torch.cat([a, b])
    fa = torch.searchsorted(a, points, right=True).double() / a.numel()
    fb = torch.searchsorted(b, points, right=True).double() / b.numel()
    return (fa - fb).abs().max().item()


def two_sample_ks_bound(n, m):
    return KOLMOGOROV_1E6 * math.sqrt((n + m) / (n * m))


def assert_a_fixed_seed_reproduces(draw):
    """draw(generator) (a CPU tensor) twice from a seeded generator, then
    again after reseeding it: the first and third agree, and the first and
    second differ (the generator advanced)."""
    generator = torch.Generator(device=device()).manual_seed(5)
    first, second = draw(generator), draw(generator)
    generator.manual_seed(5)
    assert torch.equal(first, draw(generator)) and not torch.equal(first, second)


def assert_tail_mean(draws, mean, variance, n=100_000):
    """The last n draws (past 2**31 in the callers: drawn, and from the
    law) have the law's mean within 5 standard errors."""
    tail = draws[-n:].cpu()
    assert abs(tail.mean().item() - mean) <= 5 * math.sqrt(variance / n)
