"""Samples of the ops whose stub is csrc/operations/adaptive_pool3d.mm."""

from __future__ import annotations

import torch

from . import empty, INDEX, Sample


def _pool3d(dt):
    return torch.randn(2, 3, 5, 4, 6).to(dt)


# The large calls (Sample.large): (4, 8, 12, 10, 14) pooled to (6, 5, 7), 6720
# outputs and 53760 inputs, the gathers' threads.
_LARGE_IN, _LARGE_OUT = (4, 8, 12, 10, 14), [6, 5, 7]


def _large_forward(dt):
    return dict(self=torch.randn(_LARGE_IN).to(dt), output_size=_LARGE_OUT)


def _large_backward(dt, with_indices=False):
    args = dict(grad_output=torch.randn(*_LARGE_IN[:2], *_LARGE_OUT).to(dt), self=torch.randn(_LARGE_IN).to(dt))
    if with_indices:
        _, args["indices"] = torch.ops.aten.adaptive_max_pool3d(args["self"].float(), _LARGE_OUT)
    return args


# A large call past the narrow kernel's bounds: along W, (in + 1)(out + 1)
# exceeds 2**32 - 1, so adaptive_max_pool3d_backward takes its _wide kernel.
_WIDE_IN, _WIDE_OUT = (1, 2, 1, 2, 70000), [1, 1, 69999]


def _wide_backward(dt):
    args = dict(grad_output=torch.randn(*_WIDE_IN[:2], *_WIDE_OUT).to(dt), self=torch.randn(_WIDE_IN).to(dt))
    _, args["indices"] = torch.ops.aten.adaptive_max_pool3d(args["self"].float(), _WIDE_OUT)
    return dict(args, grad_input=empty(dt))


def _adaptive_max_indices():
    # adaptive_max_pool3d's indices of a (2, 3, 5, 4, 6) input pooled to (2, 2, 3).
    _, indices = torch.ops.aten.adaptive_max_pool3d(torch.randn(2, 3, 5, 4, 6), [2, 2, 3])
    return indices


def _pool2d(dt, shape=(2, 3, 7, 10)):
    # Sizes that the output sizes do not divide: what the stock MPS kernel refuses.
    return torch.randn(shape).to(dt)


# Large 2-D calls: (4, 8, 45, 61) pooled to (7, 9), every cell overlapping
# its neighbours.
_LARGE_2D_IN, _LARGE_2D_OUT = (4, 8, 45, 61), [7, 9]


OVERLOAD_SAMPLES = [
    Sample("_adaptive_avg_pool2d", lambda dt: dict(self=_pool2d(dt), output_size=[3, 4]),
           large=lambda dt: dict(self=_pool2d(dt, _LARGE_2D_IN), output_size=_LARGE_2D_OUT)),
    Sample("adaptive_avg_pool2d.out", lambda dt: dict(self=_pool2d(dt), output_size=[3, 4], out=empty(dt))),
    Sample("_adaptive_avg_pool2d_backward",
           lambda dt: dict(grad_output=torch.randn(2, 3, 3, 4).to(dt), self=_pool2d(dt)),
           large=lambda dt: dict(grad_output=torch.randn(*_LARGE_2D_IN[:2], *_LARGE_2D_OUT).to(dt),
                                 self=_pool2d(dt, _LARGE_2D_IN))),
    Sample("_adaptive_avg_pool3d", lambda dt: dict(self=_pool3d(dt), output_size=[2, 2, 3]),
           large=_large_forward),
    Sample("adaptive_avg_pool3d.out", lambda dt: dict(self=_pool3d(dt), output_size=[2, 2, 3], out=empty(dt))),
    Sample("_adaptive_avg_pool3d_backward",
           lambda dt: dict(grad_output=torch.randn(2, 3, 2, 2, 3).to(dt), self=_pool3d(dt)),
           large=_large_backward),
    Sample("adaptive_avg_pool3d_backward.grad_input",
           lambda dt: dict(grad_output=torch.randn(2, 3, 2, 2, 3).to(dt), self=_pool3d(dt),
                           grad_input=empty(dt))),
    Sample("adaptive_max_pool3d", lambda dt: dict(self=_pool3d(dt), output_size=[2, 2, 3]),
           large=_large_forward),
    Sample("adaptive_max_pool3d.out", lambda dt: dict(self=_pool3d(dt), output_size=[2, 2, 3], out=empty(dt),
                                                      indices=empty(torch.long))),
    Sample("adaptive_max_pool3d_backward",
           lambda dt: dict(grad_output=torch.randn(2, 3, 2, 2, 3).to(dt), self=_pool3d(dt),
                           indices=_adaptive_max_indices()), {"indices": INDEX},
           large=lambda dt: _large_backward(dt, with_indices=True)),
    Sample("adaptive_max_pool3d_backward.grad_input",
           lambda dt: dict(grad_output=torch.randn(2, 3, 2, 2, 3).to(dt), self=_pool3d(dt),
                           indices=_adaptive_max_indices(), grad_input=empty(dt)), {"indices": INDEX},
           large=_wide_backward),
]
