"""Samples of the ops whose stub is csrc/operations/gamma.mm."""

from __future__ import annotations

import torch

from . import Sample

OVERLOAD_SAMPLES = [
    # Draws from the generator: the sweeps compare shapes, dtypes and errors
    # (test_gamma.py the distributions). Alphas on both sides of the boost
    # at 1.
    Sample("_standard_gamma", lambda dt: dict(self=(torch.rand(4, 5) * 4 + 0.05).to(dt)), unpinned=True),
    Sample("_sample_dirichlet", lambda dt: dict(self=(torch.rand(4, 5) * 4 + 0.05).to(dt)), unpinned=True),
]
