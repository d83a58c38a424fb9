"""The Gamma gradient's float64 reference where the CPU's own float64 op is
no reference: its small-draw series (x < 0.8) divides x**alpha S by
x**(alpha - 1) e**-x, powers that fall below double's normal numbers for a
large alpha (x**alpha underflows: the CPU returns 0, or a quotient of
subnormals off by 2x), and its 1 / alpha**2 terms cancel for an alpha below
1e-10 (to -0.0 for a subnormal alpha). There the series with the powers
divided out and digamma(alpha) = digamma(alpha + 1) - 1 / alpha, as our
kernel writes it, evaluated in float64 (test_gamma_grad.py checks it against
mpmath where the CPU's underflows)."""

from __future__ import annotations

import math

import torch


def cpu_underflows_or_cancels(alpha, x):
    """Where the CPU's float64 small-draw series is no reference."""
    alpha, x = torch.broadcast_tensors(alpha.double(), x.double())
    small = (x < 0.8) & (x > 0) & (alpha > 0) & torch.isfinite(alpha)
    return small & ((alpha * x.log() < math.log(torch.finfo(torch.float64).tiny)) | (alpha < 1e-10))


def standard_gamma_grad_reference(alpha, x):
    """_standard_gamma_grad(alpha, x) in float64: the CPU's, but where
    cpu_underflows_or_cancels, the series with the powers divided out."""
    alpha, x = torch.broadcast_tensors(alpha.double(), x.double())
    cpu = torch._standard_gamma_grad(alpha, x)
    term, tail1, tail2 = torch.ones_like(x), torch.zeros_like(x), torch.zeros_like(x)
    for i in range(1, 6):
        term = term * -x / i
        tail1, tail2 = tail1 + term / (alpha + i), tail2 + term / (alpha + i) ** 2
    series = (x.log() - torch.special.digamma(alpha + 1)) * (1 / alpha + tail1) + tail1 / alpha - tail2
    return torch.where(cpu_underflows_or_cancels(alpha, x), -x * x.exp() * series, cpu)
