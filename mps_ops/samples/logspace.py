"""Samples of the ops whose stub is csrc/operations/logspace.mm."""

from __future__ import annotations

import torch

from . import empty, Sample


def _logspace(dt):
    return dict(start=-2.0, end=3.0, steps=6, base=10.0, out=empty(dt))


OVERLOAD_SAMPLES = [
    # large (Sample.large): 10000 steps from 1 to 100, which every dtype holds.
    Sample("logspace.out", _logspace,
           large=lambda dt: dict(start=0.0, end=2.0, steps=10000, base=10.0, out=empty(dt))),
]
