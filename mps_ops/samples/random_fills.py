"""Samples of the ops whose stub is csrc/operations/random_fills.mm."""

from __future__ import annotations

import torch

from . import Sample

OVERLOAD_SAMPLES = [
    # Draws from the generator, written over self: the sweeps compare
    # shapes, dtypes and errors (test_random_fills.py the laws).
    Sample("cauchy_", lambda dt: dict(self=torch.zeros(4, 5).to(dt), median=0.5, sigma=2.0), unpinned=True),
    Sample("log_normal_", lambda dt: dict(self=torch.zeros(4, 5).to(dt), mean=0.5, std=0.75), unpinned=True),
    Sample("geometric_", lambda dt: dict(self=torch.zeros(4, 5).to(dt), p=0.3), unpinned=True),
]
