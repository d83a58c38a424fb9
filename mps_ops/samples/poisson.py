"""Samples of the ops whose stub is csrc/operations/poisson.mm."""

from __future__ import annotations

import torch

from . import Sample

OVERLOAD_SAMPLES = [
    # Counts drawn from the generator: the sweeps compare shapes, dtypes and
    # errors (test_poisson.py the distribution).
    Sample("poisson", lambda dt: dict(self=(torch.rand(4, 5) * 20).to(dt)), unpinned=True),
]
