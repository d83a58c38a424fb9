"""Samples of the ops whose stub is csrc/operations/take.mm."""

from __future__ import annotations

import torch

from . import empty, INDEX, Sample


def _take(dt):
    return dict(self=torch.randn(3, 4).to(dt), index=torch.tensor([[0, -1, 5], [11, 3, -12]]))


def _put(dt):
    return dict(self=torch.randn(3, 4).to(dt), index=torch.tensor([0, -1, 5, 5]),
                source=torch.randn(4).to(dt), accumulate=True)


OVERLOAD_SAMPLES = [
    # large (Sample.large): 10000 indices, negative ones too, into 64 x 128 values.
    Sample("take", _take, {"index": INDEX},
           large=lambda dt: dict(self=torch.randn(64, 128).to(dt), index=torch.randint(-8192, 8192, (100, 100)))),
    Sample("take.out", lambda dt: dict(_take(dt), out=empty(dt)), {"index": INDEX}),
    # large: both accumulations (put_store and put_add, or the sort's kernel
    # in deterministic mode).
    Sample("put_", _put, {"index": INDEX}, deterministic_too=True,
           large=lambda dt: [dict(self=torch.randn(64, 128).to(dt), index=torch.randint(-8192, 8192, (10000,)),
                                  source=torch.randn(10000).to(dt), accumulate=accumulate)
                             for accumulate in (True, False)]),
]
