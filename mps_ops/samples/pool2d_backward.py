"""Samples of the ops whose stub is csrc/operations/pool2d_backward.mm."""

from __future__ import annotations

import torch

from . import empty, INDEX, Sample

# Windows that overlap, start in the padding and (max pooling) skip by
# dilation, over a (2, 3, 7, 6) input: 4 x 4 max cells, 4 x 7 average cells
# (ceil_mode adds a last row of cells).
_MAX_WINDOW = dict(kernel_size=[3, 2], stride=[2, 1], padding=[1, 0], dilation=[1, 2], ceil_mode=False)
_AVG_WINDOW = dict(kernel_size=[3, 2], stride=[2, 1], padding=[1, 1], ceil_mode=True, count_include_pad=False,
                   divisor_override=None)
_AVG_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int64)


def _max_call(self, window=_MAX_WINDOW):
    out, indices = torch.ops.aten.max_pool2d_with_indices(self.float(), **window)
    return dict(grad_output=torch.randn(out.shape).to(self.dtype), self=self, indices=indices, **window)


def _max(dt):
    return _max_call(torch.randn(2, 3, 7, 6).to(dt))


def _avg_call(self, window=_AVG_WINDOW):
    # Integer gradients of a few units, so that the divisions truncate.
    scale = 1 if self.dtype.is_floating_point else 8
    out = torch.ops.aten.avg_pool2d(self.float(), **window)
    return dict(grad_output=(torch.randn(out.shape) * scale).to(self.dtype), self=self, **window)


def _avg(dt):
    return _avg_call(torch.randn(2, 3, 7, 6).to(dt))


# The large calls (Sample.large): a CNN's 3 x 3, stride 2 pooling over
# (8, 16, 32, 32), 131072 threads, contiguous and channels-last.
def _large_inputs(dt):
    x = torch.randn(8, 16, 32, 32).to(dt)
    return [x, x.to(memory_format=torch.channels_last)]


def _max_large(dt):
    window = dict(kernel_size=[3, 3], stride=[2, 2], padding=[1, 1], dilation=[1, 1], ceil_mode=False)
    return [_max_call(x, window) for x in _large_inputs(dt)]


def _avg_large(dt):
    window = dict(kernel_size=[3, 3], stride=[2, 2], padding=[1, 1], ceil_mode=False, count_include_pad=True,
                  divisor_override=None)
    return [_avg_call(x, window) for x in _large_inputs(dt)]


OVERLOAD_SAMPLES = [
    Sample("max_pool2d_with_indices_backward", _max, {"indices": INDEX}, large=_max_large),
    Sample("max_pool2d_with_indices_backward.grad_input", lambda dt: dict(_max(dt), grad_input=empty(dt)),
           {"indices": INDEX}),
    Sample("avg_pool2d_backward", _avg, dtypes=_AVG_DTYPES, large=_avg_large),
    Sample("avg_pool2d_backward.grad_input", lambda dt: dict(_avg(dt), grad_input=empty(dt)), dtypes=_AVG_DTYPES),
]
