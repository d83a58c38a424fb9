"""Samples of the ops whose stub is csrc/operations/ctc_loss.mm."""

from __future__ import annotations

import torch

from . import INDEX, STATISTICS, Sample


def _forward(dt, time=10, batch=3, classes=5, target_length=4, concatenated=False):
    """Log-softmaxed inputs, targets of every label but the blank (0), the
    input and target lengths varying by entry."""
    targets = torch.randint(1, classes, (batch, target_length))
    target_lengths = [target_length - b % 2 for b in range(batch)]
    if concatenated:
        targets = torch.cat([targets[b, :n] for b, n in enumerate(target_lengths)])
    return dict(log_probs=torch.randn(time, batch, classes).log_softmax(2).to(dt), targets=targets,
                input_lengths=[time - b % 3 for b in range(batch)], target_lengths=target_lengths, blank=0,
                zero_infinity=False)


def reached(log_alpha, input_lengths, target_lengths):
    """The elements of log_alpha the CPU writes (the rest it leaves as the
    allocation held them): the first time step, and the steps and states
    each entry's recursion reaches."""
    mask = torch.zeros(log_alpha.shape, dtype=torch.bool)
    mask[:, :1] = True
    for b, (time, length) in enumerate(zip(input_lengths, target_lengths)):
        mask[b, :time, :2 * length + 1] = True
    return mask


def _backward(args):
    """A backward call: the forward's loss and log_alpha (-inf where the
    CPU's leaves it unwritten, so that two builds agree), a gradient per
    entry."""
    nll, log_alpha = torch.ops.aten._ctc_loss(**args)
    written = reached(log_alpha, args["input_lengths"], args["target_lengths"])
    return dict(args, grad=torch.randn(nll.shape).to(nll.dtype), neg_log_likelihood=nll,
                log_alpha=log_alpha.masked_fill(~written, float("-inf")))


def _lengths_as_tensors(args):
    """The .Tensor forms' call: the lengths as tensors, and int32 targets
    (the other target dtype's kernels)."""
    return dict(args, targets=args["targets"].int(), input_lengths=torch.tensor(args["input_lengths"]),
                target_lengths=torch.tensor(args["target_lengths"]))


def _large(dt):
    """Targets of 130 elements (261 states: full groups of 256 threads, some
    with two states) and 300 classes (gradient rows over full groups), both
    target layouts."""
    return [_forward(dt, 40, 3, 300, 130), _forward(dt, 40, 3, 300, 130, concatenated=True)]


ROLES = {"targets": INDEX, "input_lengths": INDEX, "target_lengths": INDEX}
BACKWARD_ROLES = dict(ROLES, neg_log_likelihood=STATISTICS, log_alpha=STATISTICS)

# The forward's log_alpha is not pinned down past each entry's recursion: the
# CPU leaves those elements unwritten (whatever the allocation held), ours
# -inf. test_ctc_loss.py compares the loss and the reached elements.
OVERLOAD_SAMPLES = [
    Sample("_ctc_loss", _forward, ROLES, large=_large, unpinned=True),
    Sample("_ctc_loss.Tensor", lambda dt: _lengths_as_tensors(_forward(dt, concatenated=True)), ROLES,
           unpinned=True),
    Sample("_ctc_loss_backward", lambda dt: _backward(_forward(dt)), BACKWARD_ROLES,
           large=lambda dt: [_backward(args) for args in _large(dt)]),
    Sample("_ctc_loss_backward.Tensor", lambda dt: _lengths_as_tensors(_backward(_forward(dt, concatenated=True))),
           BACKWARD_ROLES),
]
