"""Samples of the ops whose stub is csrc/operations/where.mm."""

from __future__ import annotations

import torch

from . import MASK, Elementwise, empty, Sample

_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int8, torch.bool)


def _where(dt, shape=(3, 4)):
    return dict(condition=torch.rand(shape) > 0.5, self=torch.randn(shape).mul(4).to(dt),
                other=torch.randn(shape).mul(4).to(dt))


def _large(dt):
    """Enough elements for two full threadgroups (tools/gpu_launch_all.py)."""
    return _where(dt, (40, 300))


OVERLOAD_SAMPLES = [
    Sample("where.self", _where, roles={"condition": MASK}, dtypes=_DTYPES, large=_large),
    Sample("where.self_out", lambda dt: dict(_where(dt), out=empty(dt)), roles={"condition": MASK}, dtypes=_DTYPES),
]

ELEMENTWISE = {
    "where": Elementwise(lambda c, a, b, out=None: torch.where(c, a, b, out=out),
                         (lambda shape: torch.rand(shape) > 0.5, torch.randn, torch.randn)),
}
