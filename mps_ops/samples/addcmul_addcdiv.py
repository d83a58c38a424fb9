"""Samples of the ops whose stub is csrc/operations/addcmul_addcdiv.mm."""

from __future__ import annotations

import torch

from . import Elementwise, empty, Sample

_ADDCMUL_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8)


def _values(dt, shape=(3, 4)):
    x = torch.randn(shape) * 3
    return x.to(dt) if dt.is_floating_point else x.round().abs().to(dt)


def _divisor(shape):
    """Away from 0: a quotient the dtypes' tolerances can judge."""
    return torch.rand(shape) + 0.5


def _addcmul(dt):
    return dict(self=_values(dt), tensor1=_values(dt), tensor2=_values(dt), value=2 if not dt.is_floating_point else 0.5)


def _addcdiv(dt):
    return dict(self=_values(dt), tensor1=_values(dt), tensor2=_divisor((3, 4)).to(dt), value=-0.5)


OVERLOAD_SAMPLES = [
    Sample("addcmul", _addcmul, dtypes=_ADDCMUL_DTYPES),
    Sample("addcmul.out", lambda dt: dict(_addcmul(dt), out=empty(dt)), dtypes=_ADDCMUL_DTYPES),
    Sample("addcmul_", _addcmul, dtypes=_ADDCMUL_DTYPES),
    Sample("addcdiv", _addcdiv),
    Sample("addcdiv.out", lambda dt: dict(_addcdiv(dt), out=empty(dt))),
    Sample("addcdiv_", _addcdiv),
]

ELEMENTWISE = {
    "addcmul": Elementwise(lambda s, a, b, out=None: torch.addcmul(s, a, b, value=0.5, out=out),
                           (torch.randn, torch.randn, torch.randn),
                           inplace=lambda s, a, b: s.addcmul_(a, b, value=0.5)),
    "addcdiv": Elementwise(lambda s, a, b, out=None: torch.addcdiv(s, a, b, value=0.5, out=out),
                           (torch.randn, torch.randn, _divisor),
                           inplace=lambda s, a, b: s.addcdiv_(a, b, value=0.5)),
}
