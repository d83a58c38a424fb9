"""Samples of the ops whose stub is csrc/operations/gamma_grad.mm."""

from __future__ import annotations

import math

import torch

from . import Sample


def _concentrations(shape, highest):
    """Log-uniform over [0.05, highest]."""
    return torch.exp(torch.empty(shape).uniform_(math.log(0.05), math.log(highest)))


def _standard_gamma_grad(dt):
    """Concentrations and draws from them (the CPU's), as Gamma.rsample's
    backward passes them: every branch (small draws, the saddle point past
    alpha 8, the fitted rest)."""
    alpha = _concentrations((4, 5), 30.0)
    return dict(self=alpha.to(dt), output=torch._standard_gamma(alpha).to(dt))


def _dirichlet_grad(dt):
    """Dirichlet draws, their concentrations and the rows' totals, as
    Dirichlet.rsample's backward passes them (the totals expanded: operands
    of one shape, which the sweeps tile and stride). Concentrations below 6:
    the sweeps compare with the CPU at float32's tolerance, and the saddle
    point for two concentrations past 6 reaches the CPU's double result only
    to 1e-4 near the mean (test_gamma_grad.py tests it there)."""
    alpha = _concentrations((4, 5), 5.9)
    x = torch._sample_dirichlet(alpha)
    total = alpha.sum(-1, keepdim=True).expand_as(alpha).contiguous()
    return dict(x=x.to(dt), alpha=alpha.to(dt), total=total.to(dt))


OVERLOAD_SAMPLES = [Sample("_standard_gamma_grad", _standard_gamma_grad),
                    Sample("_dirichlet_grad", _dirichlet_grad, cpu_float32_inexact=True)]
