"""Samples of the ops whose stub is csrc/operations/view_copies.mm."""

from __future__ import annotations

import torch

from . import empty, Sample


OVERLOAD_SAMPLES = [
    Sample("channel_shuffle", lambda dt: dict(self=torch.randn(2, 4, 3).to(dt), groups=2)),
    # large (Sample.large): a narrowing along dim 0 is one dense run (the copy's
    # dense kernel), 50000 values: two full groups at 8 per thread and more.
    Sample("narrow_copy.out", lambda dt: dict(self=torch.randn(3, 5).to(dt), dim=1, start=1, length=3,
                                              out=empty(dt)),
           large=lambda dt: dict(self=torch.randn(1200, 50).to(dt), dim=0, start=10, length=1000, out=empty(dt))),
    # A new leading dim, a repeated one and one left alone.
    Sample("repeat", lambda dt: dict(self=torch.randn(3, 4).to(dt), repeats=[2, 1, 3])),
    Sample("pixel_shuffle", lambda dt: dict(self=torch.randn(2, 8, 3, 5).to(dt), upscale_factor=2)),
    Sample("pixel_unshuffle", lambda dt: dict(self=torch.randn(2, 3, 6, 4).to(dt), downscale_factor=2)),
]
