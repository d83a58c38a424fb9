"""Samples of the ops whose stub is csrc/operations/logspace.mm."""

from __future__ import annotations

import torch

from . import empty, Sample


def _logspace(dt):
    return dict(start=-2.0, end=3.0, steps=6, base=10.0, out=empty(dt))


OVERLOAD_SAMPLES = [
    Sample("logspace.out", _logspace),
]
