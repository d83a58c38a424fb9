"""Samples of the ops whose stub is csrc/operations/fake_quantize.mm: inputs
spread over more than the quantized range (so both mask values occur), the
qparams of an 8-bit grid. Per channel along dim 1, which the sweeps' and the
GPU launcher's tiling along dim 0 leaves alone."""

from __future__ import annotations

import torch

from . import SCALAR, STATISTICS, Sample

QPARAM_ROLES = {"scale": SCALAR, "zero_point": SCALAR, "fake_quant_enabled": SCALAR}


def _input(dt, *shape):
    return (torch.randn(*shape) * 40).to(dt)


def _per_tensor(dt):
    return dict(self=_input(dt, 4, 6), scale=0.25, zero_point=3, quant_min=-128, quant_max=127)


def _tensor_qparams(dt):
    return dict(self=_input(dt, 4, 6), scale=torch.tensor([0.25]), zero_point=torch.tensor([3], dtype=torch.int32),
                fake_quant_enabled=torch.tensor([1]), quant_min=-128, quant_max=127)


def _per_channel(dt):
    return dict(self=_input(dt, 4, 6), scale=torch.rand(6) + 0.1,
                zero_point=torch.randint(-5, 6, (6,), dtype=torch.int32), axis=1, quant_min=-128, quant_max=127)


def _large(dt):
    """A conv layer's activations (per tensor) and weights (per channel)."""
    return dict(self=_input(dt, 32, 64, 32, 32), scale=0.25, zero_point=3, quant_min=-128, quant_max=127)


def _per_channel_large(dt):
    return dict(self=_input(dt, 64, 256, 3, 3), scale=torch.rand(256) + 0.1,
                zero_point=torch.randint(-5, 6, (256,), dtype=torch.int32), axis=1, quant_min=-128, quant_max=127)


def _tensor_qparams_large(dt):
    return dict(_tensor_qparams(dt), self=_input(dt, 32, 64, 32, 32))


OVERLOAD_SAMPLES = [
    Sample("fake_quantize_per_tensor_affine_cachemask", _per_tensor, large=_large),
    Sample("_fake_quantize_per_tensor_affine_cachemask_tensor_qparams", _tensor_qparams, roles=QPARAM_ROLES,
           large=_tensor_qparams_large),
    Sample("fake_quantize_per_channel_affine_cachemask", _per_channel, roles=QPARAM_ROLES, large=_per_channel_large),
]


def _fused(per_row):
    """The fused observer's call mid-training (running statistics observed
    before; both switches on), per tensor or per row along dim 0."""
    def build(dt):
        channels = 4 if per_row else 1
        low = torch.full((channels,), -2.0) - torch.rand(channels)
        return dict(self=_input(dt, 4, 6) / 20, observer_on=torch.tensor([1]), fake_quant_on=torch.tensor([1]),
                    running_min=low, running_max=-low, scale=torch.ones(channels),
                    zero_point=torch.zeros(channels, dtype=torch.int32), averaging_const=0.01,
                    quant_min=-128, quant_max=127, ch_axis=0, per_row_fake_quant=per_row, symmetric_quant=False)
    return build


FUSED_ROLES = {**QPARAM_ROLES, "observer_on": SCALAR, "fake_quant_on": SCALAR,
               "running_min": STATISTICS, "running_max": STATISTICS}


def _fused_large(dt):
    """Activations observed per tensor, and a conv layer's weights per row
    (512 output channels: threads over two threadgroups and more)."""
    weights = _fused(True)(dt)
    channels = 512
    low = torch.full((channels,), -2.0) - torch.rand(channels)
    weights.update(self=_input(dt, channels, 64, 3, 3) / 20, running_min=low, running_max=-low,
                   scale=torch.ones(channels), zero_point=torch.zeros(channels, dtype=torch.int32))
    return [dict(_fused(False)(dt), self=_input(dt, 32, 64, 32, 32) / 20), weights]


OVERLOAD_SAMPLES.append(Sample("_fused_moving_avg_obs_fq_helper", _fused(False), roles=FUSED_ROLES,
                               dtypes=(torch.float32,), large=_fused_large))


# The learnable fake quantizers: a float zero point (LearnableFakeQuantize's
# parameters), off the integers so the rounding matters.
LEARNABLE_ROLES = {"scale": SCALAR, "zero_point": SCALAR}


def _learnable_per_tensor(dt):
    return dict(self=_input(dt, 4, 6), scale=torch.tensor([0.25]), zero_point=torch.tensor([2.7]), quant_min=-128,
                quant_max=127, grad_factor=0.5)


def _learnable_per_channel(dt):
    return dict(self=_input(dt, 4, 6), scale=torch.rand(6) + 0.1, zero_point=torch.rand(6) * 10 - 5, axis=1,
                quant_min=-128, quant_max=127, grad_factor=0.5)


def _backward(forward):
    def build(dt):
        return dict(grad=torch.randn(4, 6).to(dt), **forward(dt))
    return build


def _learnable_large(forward, shape, channels):
    def build(dt):
        call = dict(forward(dt), self=_input(dt, *shape))
        if "axis" in call:
            call.update(scale=torch.rand(channels) + 0.1, zero_point=torch.rand(channels) * 10 - 5)
        return call
    return build


def _backward_large(forward):
    def build(dt):
        call = forward(dt)
        return dict(call, grad=torch.randn(call["self"].shape).to(dt))
    return build


_PER_TENSOR_LARGE = _learnable_large(_learnable_per_tensor, (32, 64, 32, 32), 1)
_PER_CHANNEL_LARGE = _learnable_large(_learnable_per_channel, (64, 256, 3, 3), 256)

OVERLOAD_SAMPLES += [
    Sample("_fake_quantize_learnable_per_tensor_affine", _learnable_per_tensor, roles=LEARNABLE_ROLES,
           large=_PER_TENSOR_LARGE),
    Sample("_fake_quantize_learnable_per_channel_affine", _learnable_per_channel, roles=LEARNABLE_ROLES,
           large=_PER_CHANNEL_LARGE),
    Sample("_fake_quantize_learnable_per_tensor_affine_backward", _backward(_learnable_per_tensor),
           roles=LEARNABLE_ROLES, large=_backward_large(_PER_TENSOR_LARGE)),
    Sample("_fake_quantize_learnable_per_channel_affine_backward", _backward(_learnable_per_channel),
           roles=LEARNABLE_ROLES, large=_backward_large(_PER_CHANNEL_LARGE)),
]
