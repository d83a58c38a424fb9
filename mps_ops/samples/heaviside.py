"""Samples of the ops whose stub is csrc/operations/heaviside.mm."""

from __future__ import annotations

import torch

from . import Elementwise, empty, Sample


def _heaviside(dt):
    return dict(self=torch.randint(-1, 2, (3, 4)).to(dt), values=torch.rand(3, 4).to(dt))


OVERLOAD_SAMPLES = [
    Sample("heaviside", _heaviside),
    Sample("heaviside.out", lambda dt: dict(_heaviside(dt), out=empty(dt))),
    Sample("heaviside_", _heaviside),
]

ELEMENTWISE = {
    # Zeros in self: where heaviside takes `values`.
    "heaviside": Elementwise(torch.heaviside, (lambda shape: torch.randint(-1, 2, shape).float(),
                                               lambda shape: torch.rand(shape)),
                             inplace=torch.Tensor.heaviside_),
}
