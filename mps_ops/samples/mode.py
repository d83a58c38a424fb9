"""Samples of the ops whose stub is csrc/operations/mode.mm."""

from __future__ import annotations

import torch

from . import Sample


OVERLOAD_SAMPLES = [
    Sample("mode", lambda dt: dict(self=torch.randint(0, 3, (3, 5)).to(dt), dim=-1, keepdim=False)),
]
