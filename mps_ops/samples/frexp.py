"""Samples of the ops whose stub is csrc/operations/frexp.mm."""

from __future__ import annotations

import torch

from . import Elementwise, empty, Sample


OVERLOAD_SAMPLES = [
    Sample("frexp.Tensor_out", lambda dt: dict(self=torch.randn(3, 4).to(dt) * 100, mantissa=empty(dt),
                                               exponent=empty(torch.int32))),
]

ELEMENTWISE = {
    "frexp": Elementwise(torch.frexp, (lambda shape: torch.randn(shape) * 100,)),
}
