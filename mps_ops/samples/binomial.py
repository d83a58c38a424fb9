"""Samples of the ops whose stub is csrc/operations/binomial.mm."""

from __future__ import annotations

import torch

from . import Sample

OVERLOAD_SAMPLES = [
    # Counts drawn from the generator: the sweeps compare shapes, dtypes and
    # errors (test_binomial.py the distribution). Both algorithms: count *
    # min(prob, 1 - prob) on both sides of 10.
    Sample("binomial", lambda dt: dict(count=torch.randint(0, 60, (4, 5)).to(dt), prob=torch.rand(4, 5).to(dt)),
           unpinned=True),
]
