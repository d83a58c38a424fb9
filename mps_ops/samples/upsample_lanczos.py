"""Samples of the ops whose stub is csrc/operations/upsample_lanczos.mm."""

from __future__ import annotations

import torch

from . import empty, Sample


def _lanczos(dt):
    return dict(self=torch.randn(1, 2, 5, 6).to(dt), output_size=[3, 8], align_corners=False)


def _lanczos_backward(dt):
    return dict(grad_output=torch.randn(1, 2, 3, 8).to(dt), output_size=[3, 8], input_size=[1, 2, 5, 6],
                align_corners=False)


def _large_backward(dt):
    """2 x 4 planes of 40 x 50 gradients into 30 x 70 inputs."""
    return dict(grad_output=torch.randn(2, 4, 40, 50).to(dt), output_size=[40, 50], input_size=[2, 4, 30, 70],
                align_corners=False)


def _aa_backward_samples(op):
    """The bilinear and bicubic antialiased resizes' backwards: the Lanczos
    backward's calls."""
    return [Sample(op, _lanczos_backward, large=_large_backward),
            Sample(f"{op}.grad_input", lambda dt: dict(_lanczos_backward(dt), grad_input=empty(dt)))]


OVERLOAD_SAMPLES = [
    Sample("_upsample_lanczos2d_aa", _lanczos),
    Sample("_upsample_lanczos2d_aa.out", lambda dt: dict(_lanczos(dt), out=empty(dt))),
    *_aa_backward_samples("_upsample_lanczos2d_aa_backward"),
    *_aa_backward_samples("_upsample_bilinear2d_aa_backward"),
    *_aa_backward_samples("_upsample_bicubic2d_aa_backward"),
]
