"""Samples of the ops whose stub is csrc/operations/embedding_renorm.mm."""

from __future__ import annotations

import torch

from . import INDEX, Sample


def _large(dt):
    """Many indices of short rows, several per threadgroup, some repeated."""
    g = torch.Generator().manual_seed(0)
    return dict(self=torch.randn(600, 50, generator=g).to(dt) * 2,
                indices=torch.randint(-600, 600, (1000,), generator=g), max_norm=1.0, norm_type=2.0)


OVERLOAD_SAMPLES = [
    Sample("embedding_renorm_", lambda dt: dict(self=torch.randn(5, 3).to(dt) * 2,
                                                indices=torch.tensor([0, 3, 3, -1]), max_norm=1.0,
                                                norm_type=2.0), {"indices": INDEX}, large=_large),
]
