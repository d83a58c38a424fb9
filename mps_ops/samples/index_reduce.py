"""Samples of the ops whose stub is csrc/operations/index_reduce.mm."""

from __future__ import annotations

import torch

from . import empty, INDEX, Sample


def _index_reduce(dt, reduce, include_self):
    """Five targets along dim 0, three of them repeated (0 twice, 4 three
    times), one never indexed: a reduction per overload between them."""
    return dict(self=(torch.randn(5, 3) * 3).to(dt), dim=0, index=torch.tensor([0, 4, 0, 2, 4, 4]),
                source=(torch.randn(6, 3) * 3).to(dt), reduce=reduce, include_self=include_self)


def _large(dt):
    """200 indices into 64 targets of 16 x 8 elements, along the middle dim:
    every reduction."""
    return [dict(self=torch.randn(16, 64, 8).to(dt), dim=1, index=torch.randint(0, 64, (200,)),
                 source=torch.randn(16, 200, 8).to(dt), reduce=reduce, include_self=include_self)
            for reduce, include_self in (("prod", True), ("mean", False), ("amax", True), ("amin", False))]


OVERLOAD_SAMPLES = [
    Sample("index_reduce", lambda dt: _index_reduce(dt, "mean", True), {"index": INDEX}, large=_large),
    Sample("index_reduce.out", lambda dt: dict(_index_reduce(dt, "prod", True), out=empty(dt)), {"index": INDEX}),
    Sample("index_reduce_", lambda dt: _index_reduce(dt, "amax", False), {"index": INDEX}),
]
