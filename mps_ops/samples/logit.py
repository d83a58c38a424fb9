"""Samples of the ops whose stub is csrc/operations/logit.mm."""

from __future__ import annotations

import torch

from . import Elementwise, empty, Sample


def _logit(dt):
    return dict(self=torch.rand(3, 4).to(dt), eps=1e-3)


OVERLOAD_SAMPLES = [
    Sample("logit_", _logit),
    Sample("logit", _logit),
    Sample("logit.out", lambda dt: dict(_logit(dt), out=empty(dt))),
]


# No eps: the clamp's bounds differ in half and bfloat16 by design (the
# registry's `differs`), and test_logit.py covers them.
ELEMENTWISE = {
    "logit": Elementwise(lambda x, out=None: torch.logit(x, out=out), (torch.rand,)),
}
