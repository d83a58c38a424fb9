"""Samples of the ops whose stub is csrc/operations/layer_norm_backward.mm."""

from __future__ import annotations

import torch

from . import STATISTICS, Sample


def _call(dt, rows=3, shape=(4, 5), affine=True):
    """A backward call with the forward's statistics (computed in float, as
    a float weight's forward keeps them), every output asked for."""
    x = torch.randn((rows, *shape)).to(dt)
    weight = torch.randn(shape).to(dt) if affine else None
    bias = torch.randn(shape).to(dt) if affine else None
    _, mean, rstd = torch.native_layer_norm(x.float(), list(shape), None, None, 1e-5)
    return dict(grad_out=torch.randn(x.shape).to(dt), input=x, normalized_shape=list(shape), mean=mean.to(dt),
                rstd=rstd.to(dt), weight=weight, bias=bias, output_mask=[True, True, True])


def _large(dt):
    """Rows of 256 and of 1500 (several row threads each, several rows per
    group), 300 rows: five chunks of the weight gradient's first pass. Rows
    of 255: half and bfloat16 rows of an odd length take the kernels that
    read one element at a time, the even ones two per word."""
    return [_call(dt, 300, (256,)), _call(dt, 130, (1500,)), _call(dt, 70, (16,), affine=False),
            _call(dt, 200, (255,))]


OVERLOAD_SAMPLES = [
    Sample("native_layer_norm_backward", _call, {"mean": STATISTICS, "rstd": STATISTICS}, large=_large),
]
