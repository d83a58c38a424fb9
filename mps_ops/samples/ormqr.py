"""Samples of the ops whose stub is csrc/operations/ormqr.mm."""

from __future__ import annotations

import torch

from . import empty, Sample


def _reflectors(*shape):
    a, tau = torch.geqrf(torch.randn(*shape))
    return a, tau


def _ormqr(dt, left=True, transpose=False):
    a, tau = _reflectors(2, 5, 3)
    other = torch.randn(2, 5, 4) if left else torch.randn(2, 4, 5)
    return dict(self=a.to(dt), input2=tau.to(dt), input3=other.to(dt), left=left, transpose=transpose)


OVERLOAD_SAMPLES = [
    Sample("ormqr", lambda dt: _ormqr(dt, left=False, transpose=True), dtypes=(torch.float32,),
           large=lambda dt: dict(_ormqr(dt), input3=torch.randn(2, 5, 600))),
    Sample("ormqr.out", lambda dt: dict(_ormqr(dt, transpose=True), out=empty(dt)), dtypes=(torch.float32,)),
]
