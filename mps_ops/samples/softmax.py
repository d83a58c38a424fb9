"""Samples of the ops whose stub is csrc/operations/softmax.mm."""

from __future__ import annotations

import torch

from . import empty, Sample


def _softmax(dt, dim=1):
    return dict(self=torch.randn(3, 5, 4).to(dt), dim=dim, half_to_float=False)


def _large(dt):
    """1024 rows of 300 (held in registers, several rows per SIMD group),
    8 rows of 20000 (held by groups of 1024 threads) and 2 rows of 40000
    (read twice: the online pass) (Sample.large)."""
    return [dict(self=torch.randn(1024, 300).to(dt), dim=-1, half_to_float=False),
            dict(self=torch.randn(8, 20000).to(dt), dim=-1, half_to_float=False),
            dict(self=torch.randn(2, 40000).to(dt), dim=-1, half_to_float=False)]


OVERLOAD_SAMPLES = [
    Sample("_softmax", _softmax, large=_large),
    Sample("_softmax.out", lambda dt: dict(_softmax(dt), out=empty(dt))),
    Sample("_log_softmax", _softmax, large=_large),
    Sample("_log_softmax.out", lambda dt: dict(_softmax(dt), out=empty(dt))),
]
