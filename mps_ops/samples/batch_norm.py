"""Samples of the ops whose stub is csrc/operations/batch_norm.mm."""

from __future__ import annotations

import torch

from . import STATISTICS, Sample, empty


def _params(dt, channels, param_dtype=None):
    p = param_dtype or dt
    return dict(weight=torch.randn(channels).to(p), bias=torch.randn(channels).to(p),
                running_mean=torch.randn(channels).to(p), running_var=(torch.rand(channels) + 0.5).to(p))


def _forward(dt, shape=(4, 3, 5, 6), training=True, channels_last=False, param_dtype=None):
    x = (torch.randn(shape) * 2 + 1).to(dt)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    return dict(input=x, **_params(dt, shape[1], param_dtype), training=training, momentum=0.1, eps=1e-5)


def _outs(dt, param_dtype=None):
    p = param_dtype or dt
    return dict(out=empty(dt), save_mean=empty(p), save_invstd=empty(p))


def _legit_no_stats(dt, **kw):
    call = _forward(dt, **kw)
    del call["running_mean"], call["running_var"]
    return call


def _with_update(dt, **kw):
    call = _forward(dt, **kw)
    del call["training"]
    return call


def _backward(dt, shape=(4, 3, 5, 6), train=True, channels_last=False, param_dtype=None):
    """A backward call with the forward's statistics (the CPU's own
    forward's), every gradient asked for."""
    f = _forward(dt, shape, train, channels_last, param_dtype)
    _, save_mean, save_invstd = torch.ops.aten.native_batch_norm(
        f["input"], f["weight"], f["bias"], f["running_mean"].clone(), f["running_var"].clone(), train, 0.1, 1e-5)
    grad = torch.randn(shape).to(dt)
    if channels_last:
        grad = grad.to(memory_format=torch.channels_last)
    return dict(grad_out=grad, input=f["input"], weight=f["weight"], running_mean=f["running_mean"],
                running_var=f["running_var"], save_mean=save_mean, save_invstd=save_invstd, train=train, eps=1e-5,
                output_mask=[True, True, True])


def _new_backward(dt, **kw):
    call = _backward(dt, **kw)
    call["save_var"] = call.pop("save_invstd")
    call["update"] = call.pop("train")
    call["reserve"] = torch.empty(0, dtype=torch.uint8)
    return call


# 16 x 8 x 32 x 32: every channel 16384 elements, the element passes
# hundreds of threadgroups; contiguous and channels-last, training and
# evaluation, float parameters beside a half or bfloat input.
_LARGE_SHAPE = (16, 8, 32, 32)


def _large_forward(build):
    def large(dt):
        calls = [build(dt, shape=_LARGE_SHAPE), build(dt, shape=_LARGE_SHAPE, channels_last=True)]
        if dt != torch.float32:
            calls.append(build(dt, shape=_LARGE_SHAPE, param_dtype=torch.float32))
        return calls
    return large


# Many channels: the per-channel kernels (a thread per channel) in two full
# threadgroups of up to 1024 threads.
_MANY_CHANNELS = (4, 2048, 4)


def _large_training_modes(build, flag):
    def large(dt):
        calls = _large_forward(build)(dt)
        return calls + [build(dt, shape=_LARGE_SHAPE, channels_last=True, **{flag: False}),
                        build(dt, shape=_MANY_CHANNELS)]
    return large


_STATISTICS = {"save_mean": STATISTICS, "save_invstd": STATISTICS, "save_var": STATISTICS}

OVERLOAD_SAMPLES = [
    Sample("native_batch_norm", _forward, large=_large_training_modes(_forward, "training")),
    Sample("native_batch_norm.out", lambda dt: dict(_forward(dt), **_outs(dt)),
           large=lambda dt: [dict(_forward(dt, _LARGE_SHAPE), **_outs(dt))]),
    Sample("_native_batch_norm_legit", _forward, large=_large_training_modes(_forward, "training")),
    Sample("_native_batch_norm_legit.out", lambda dt: dict(_forward(dt, training=False), **_outs(dt)),
           large=lambda dt: [dict(_forward(dt, _LARGE_SHAPE), **_outs(dt))]),
    Sample("_native_batch_norm_legit.no_stats", _legit_no_stats, large=_large_forward(_legit_no_stats)),
    Sample("_native_batch_norm_legit.no_stats_out", lambda dt: dict(_legit_no_stats(dt), **_outs(dt)),
           large=lambda dt: [dict(_legit_no_stats(dt, shape=_LARGE_SHAPE), **_outs(dt))]),
    Sample("_batch_norm_with_update", _with_update, large=_large_forward(_with_update)),
    Sample("_batch_norm_with_update.out",
           lambda dt: dict(_with_update(dt), **_outs(dt), reserve=empty(torch.uint8)),
           large=lambda dt: [dict(_with_update(dt, shape=_LARGE_SHAPE), **_outs(dt), reserve=empty(torch.uint8))]),
    Sample("native_batch_norm_backward", _backward, _STATISTICS, large=_large_training_modes(_backward, "train")),
    Sample("batch_norm_backward", _new_backward, _STATISTICS, large=_large_training_modes(_new_backward, "train")),
]
