"""Samples of the ops whose stub is csrc/operations/nonzero_static.mm."""

from __future__ import annotations

import torch

from . import Sample, empty


def _input(dt):
    """A (4, 5) input with about half its elements zero."""
    x = torch.randn(4, 5) * (torch.rand(4, 5) < 0.5)
    return x.to(dt) if dt != torch.bool else x != 0


def _large(dt):
    """Several threadgroups of blocks, the size inside the nonzeros."""
    x = torch.randn(64, 1000) * (torch.rand(64, 1000) < 0.5)
    return dict(self=x.to(dt) if dt != torch.bool else x != 0, size=20000, fill_value=-1)


DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.uint8, torch.bool)

OVERLOAD_SAMPLES = [
    Sample("nonzero_static", lambda dt: dict(self=_input(dt), size=12, fill_value=-1), dtypes=DTYPES, large=_large),
    Sample("nonzero_static.out", lambda dt: dict(self=_input(dt), size=12, fill_value=-1, out=empty(torch.long)),
           dtypes=DTYPES),
]
