"""Samples of the ops whose stub is csrc/operations/grid_sampler.mm."""

from __future__ import annotations

import torch

from . import Sample


def _call(dt, n=2, c=3, size=(5, 6), points=(4, 7), interpolation=0, padding=0, align_corners=False):
    """grid_sample's backward (2-D or 3-D, by len(size)) at grid points in
    [-1.2, 1.2] (some outside the input), both gradients asked for."""
    x = torch.randn(n, c, *size).to(dt)
    grid = (torch.rand(n, *points, len(size)) * 2.4 - 1.2).to(dt)
    return dict(grad_output=torch.randn(n, c, *points).to(dt), input=x, grid=grid,
                interpolation_mode=interpolation, padding_mode=padding, align_corners=align_corners,
                output_mask=[True, True])


def _large(dt):
    """Every interpolation and padding mode over several threadgroups of
    points (2 x 24 x 24)."""
    return [_call(dt, 2, 3, (9, 11), (24, 24), interpolation, padding, align)
            for interpolation in (0, 1, 2) for padding in (0, 1, 2) for align in (False, True)]


def _large_3d(dt):
    """Both interpolation modes and every padding mode over several
    threadgroups of points (2 x 8 x 12 x 12)."""
    return [_call(dt, 2, 3, (5, 7, 9), (8, 12, 12), interpolation, padding, align)
            for interpolation in (0, 1) for padding in (0, 1, 2) for align in (False, True)]


OVERLOAD_SAMPLES = [
    # float32 first: the CPU adds each half or bfloat16 share in that type,
    # ours in float, so the one-dtype comparisons (the demo's) take float32.
    Sample("grid_sampler_2d_backward", _call, dtypes=(torch.float32, torch.float16, torch.bfloat16), large=_large),
    Sample("grid_sampler_3d_backward", lambda dt: _call(dt, size=(4, 5, 6), points=(3, 4, 5)),
           dtypes=(torch.float32, torch.float16, torch.bfloat16), large=_large_3d),
]
