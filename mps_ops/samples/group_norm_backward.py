"""Samples of the ops whose stub is csrc/operations/group_norm_backward.mm."""

from __future__ import annotations

import torch

from . import STATISTICS, Sample


def _call(dt, n=3, c=6, hxw=10, groups=3, affine=True):
    """A backward call with the forward's statistics, every output asked for."""
    x = torch.randn(n, c, hxw).to(dt)
    weight = torch.randn(c).to(dt) if affine else None
    _, mean, rstd = torch.native_group_norm(x, weight, None, n, c, hxw, groups, 1e-5)
    return dict(grad_out=torch.randn(x.shape).to(dt), input=x, mean=mean, rstd=rstd, weight=weight, N=n, C=c,
                HxW=hxw, group=groups, output_mask=[True, True, True])


def _large(dt):
    """Groups of 32 channels of 1024 (long rows for the sums), of one channel
    of 4 elements (many short rows; 1024 channels: the per-channel pass over
    several threadgroups), and without a weight: every pass over several
    threadgroups."""
    return [_call(dt, 8, 64, 1024, 2), _call(dt, 16, 1024, 4, 1024), _call(dt, 16, 32, 256, 8, affine=False)]


OVERLOAD_SAMPLES = [
    Sample("native_group_norm_backward", _call, {"mean": STATISTICS, "rstd": STATISTICS}, large=_large),
]
