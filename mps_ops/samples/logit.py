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
    Sample("logit_backward", lambda dt: dict(grad_output=torch.randn(3, 4).to(dt), self=torch.rand(3, 4).to(dt),
                                             eps=1e-3)),
    Sample("logit_backward.grad_input", lambda dt: dict(grad_output=torch.randn(3, 4).to(dt),
                                                        self=torch.rand(3, 4).to(dt), eps=1e-3,
                                                        grad_input=empty(dt))),
]


# No eps: the clamp's bounds differ in half and bfloat16 by design (the
# registry's `differs`), and test_logit.py covers them.
def _logit_backward_call(grad, x, out=None):
    if out is None:
        return torch.ops.aten.logit_backward(grad, x)
    return torch.ops.aten.logit_backward.grad_input(grad, x, grad_input=out)


ELEMENTWISE = {
    "logit": Elementwise(lambda x, out=None: torch.logit(x, out=out), (torch.rand,)),
    "logit_backward": Elementwise(_logit_backward_call, (torch.randn, torch.rand)),
}
