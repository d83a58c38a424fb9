"""Samples of the ops whose stub is csrc/operations/nll_loss.mm."""

from __future__ import annotations

import torch

from . import empty, INDEX, Sample


# The samples ignore a class (1), not -100: the sweeps turn targets into
# uint8, where -100 becomes 156, out of range, and the CPU's nll_loss
# backward without reduction writes out of bounds for it (it checks only
# for mean and sum; its message for a uint8 target is not even UTF-8).
# test_nll_loss.py covers -100.
IGNORED = 1


def _nll(dt, reduction=1):
    """Four samples of five classes, one ignored."""
    return dict(self=torch.randn(4, 5).to(dt), target=torch.tensor([0, 4, IGNORED, 2]), weight=torch.rand(5).to(dt),
                reduction=reduction, ignore_index=IGNORED)


def _nll2d(dt, reduction=1):
    return dict(self=torch.randn(2, 3, 4, 5).to(dt), target=torch.randint(0, 3, (2, 4, 5)),
                weight=torch.rand(3).to(dt), reduction=reduction, ignore_index=IGNORED)


def _large(dt, spatial=False, reduction=1, target_dtype=torch.long):
    """Enough targets for several threadgroups of the mean's first pass
    (Sample.large)."""
    if spatial:
        return dict(self=torch.randn(4, 3, 64, 64).to(dt), target=torch.randint(0, 3, (4, 64, 64)),
                    weight=torch.rand(3).to(dt), reduction=reduction, ignore_index=IGNORED)
    return dict(self=torch.randn(9000, 3).to(dt), target=torch.randint(0, 3, (9000,)).to(target_dtype),
                weight=torch.rand(3).to(dt), reduction=reduction, ignore_index=IGNORED)


def _large_calls(dt):
    """Every kernel of the 1-D loss, for long and uint8 targets: the mean's
    two passes, then reduction none's one."""
    return [_large(dt, reduction=r, target_dtype=t) for r in (1, 0) for t in (torch.long, torch.uint8)]


def _backward(forward_args, reduction):
    """A backward call: the forward's total_weight, a per-position or single
    gradient."""
    args = dict(forward_args, reduction=reduction)
    x, target = args["self"], args["target"]
    forward = torch.ops.aten.nll_loss2d_forward if x.dim() == 4 else torch.ops.aten.nll_loss_forward
    out, total_weight = forward(x.float(), target, args["weight"].float(), reduction, IGNORED)
    return dict(args, grad_output=torch.randn(out.shape).to(x.dtype), total_weight=total_weight.to(x.dtype))


ROLES = {"target": INDEX}

OVERLOAD_SAMPLES = [
    Sample("nll_loss_forward", _nll, ROLES, large=_large_calls),
    Sample("nll_loss_forward.output", lambda dt: dict(_nll(dt), output=empty(dt), total_weight=empty(dt)), ROLES),
    Sample("nll_loss_backward", lambda dt: _backward(_nll(dt), 1), ROLES,
           large=lambda dt: [_backward(_large(dt, target_dtype=t), 0) for t in (torch.long, torch.uint8)]),
    Sample("nll_loss_backward.grad_input", lambda dt: dict(_backward(_nll(dt), 0), grad_input=empty(dt)), ROLES),
    Sample("nll_loss2d_forward", _nll2d, ROLES, large=lambda dt: _large(dt, spatial=True)),
    Sample("nll_loss2d_forward.output", lambda dt: dict(_nll2d(dt), output=empty(dt), total_weight=empty(dt)),
           ROLES),
    Sample("nll_loss2d_backward", lambda dt: _backward(_nll2d(dt), 0), ROLES,
           large=lambda dt: _backward(_large(dt, spatial=True), 1)),
    Sample("nll_loss2d_backward.grad_input",
           lambda dt: dict(_backward(_nll2d(dt), 1), grad_input=empty(dt)), ROLES),
]
