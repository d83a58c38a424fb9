"""Samples of the ops whose stub is csrc/operations/logit.mm."""

from __future__ import annotations

import torch

from . import Sample


OVERLOAD_SAMPLES = [
    Sample("logit_", lambda dt: dict(self=torch.rand(3, 4).to(dt), eps=1e-3)),
]
