"""_upsample_bilinear2d_aa_backward and _upsample_bicubic2d_aa_backward
(fills: torch 2.9 to 2.13 lack them on MPS, where the forwards run, so
training through F.interpolate(..., antialias=True) raised) against the CPU:
down- and upsampling, one axis or both, given scales and align_corners, a
wide window, an empty batch, non-contiguous gradients, the grad_input= form,
F.interpolate's gradient through autograd (and the bilinear OpInfo's), and
the CPU's errors."""

from __future__ import annotations

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

from helpers import (assert_gradients_near, errors_of_cpu_and_ours, opinfo_gradients, run_on_kernels,
                     to_device)
from mps_ops.testing import emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_upsample_bilinear2d_aa_backward", "_upsample_bicubic2d_aa_backward"}

BACKWARDS = {"bilinear": torch.ops.aten._upsample_bilinear2d_aa_backward,
             "bicubic": torch.ops.aten._upsample_bicubic2d_aa_backward}
MODES = list(BACKWARDS)

RESIZES = [
    ((2, 3, 17, 23), (8, 9), False, None),       # both axes down
    ((1, 2, 8, 8), (19, 13), False, None),       # both up
    ((1, 1, 30, 7), (30, 21), False, None),      # width only
    ((1, 3, 9, 40), (4, 40), False, None),       # height only
    ((2, 5, 13, 11), (5, 29), False, None),      # down and up
    ((1, 2, 12, 10), (7, 4), True, None),        # align_corners
    ((1, 2, 12, 10), (5, 25), False, (0.4, 2.5)),  # given scales
    ((1, 1, 64, 3), (5, 3), False, None),        # a wide window: 2 * ceil(2 * 12.8) + 1 taps (bicubic)
    ((0, 2, 6, 6), (3, 3), False, None),         # an empty batch
]


def assert_near_cpu(actual, expected, msg=""):
    """Ours sums each element's terms in the CPU's order with its weights in
    float; the CPU's build fuses multiply-adds: a few ulps of the largest
    gradient apart (more where terms cancel)."""
    scale = expected.abs().max().item() if expected.numel() else 0.0
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=8 * torch.finfo(torch.float32).eps * scale,
                               msg=lambda m: f"{msg}: {m}")


def _gradient_layouts(grad):
    yield "contiguous", grad
    yield "transposed", grad.transpose(2, 3).contiguous().transpose(2, 3)
    yield "channels_last", grad.contiguous(memory_format=torch.channels_last)
    yield "strided", torch.stack([grad, grad], -1)[..., 0]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape, size, align_corners, scales", RESIZES)
def test_backward_matches_the_cpu(mode, shape, size, align_corners, scales):
    backward = BACKWARDS[mode]
    scale_args = scales or (None, None)
    grad = torch.randn(shape[0], shape[1], *size)
    for layout, g in _gradient_layouts(grad):
        expected = backward(g, size, shape, align_corners, *scale_args)
        actual, dispatches = run_on_kernels(backward, g, size, shape, align_corners, *scale_args)
        assert [d.op for d in dispatches] == (["upsample_aa_backward"] if g.numel() else []), layout
        assert actual.shape == expected.shape and actual.is_contiguous(), layout
        assert_near_cpu(actual, expected, layout)


@pytest.mark.parametrize("mode", MODES)
def test_interpolate_and_its_gradient(mode):
    """The forward is the device's own (ours on no torch), the backward ours."""
    x = torch.randn(2, 3, 21, 14, requires_grad=True)
    expected = torch.nn.functional.interpolate(x, size=(9, 30), mode=mode, antialias=True)
    expected.square().sum().backward()
    ours = to_device(x.detach()).requires_grad_()
    with emulate():
        actual = torch.nn.functional.interpolate(ours, size=(9, 30), mode=mode, antialias=True)
        actual.square().sum().backward()
    torch.testing.assert_close(ours.grad.cpu(), x.grad, rtol=1e-5, atol=1e-5)


OPINFO = next(o for o in op_db if o.name == "_upsample_bilinear2d_aa")
OPINFO_SAMPLES = list(OPINFO.sample_inputs("cpu", torch.float32, requires_grad=True))


@pytest.mark.parametrize("index", range(len(OPINFO_SAMPLES)))
def test_bilinear_opinfo_gradients(index):
    inputs, gradients = opinfo_gradients(OPINFO, OPINFO_SAMPLES[index], index, torch.float32)
    expected = gradients(*inputs)
    actual, dispatches = run_on_kernels(gradients, *inputs)
    assert "upsample_aa_backward" in {d.op for d in dispatches}
    truth = gradients(*[t.double() for t in inputs])
    assert_gradients_near(actual, expected, truth, torch.float32, f"sample {index}")


@pytest.mark.parametrize("mode", MODES)
def test_grad_input_form(mode):
    """grad_input= of the right size keeps its strides; an empty one is resized."""
    backward = BACKWARDS[mode]
    grad = torch.randn(1, 2, 6, 5)
    expected = backward(grad, (6, 5), (1, 2, 10, 12), False)
    for make in (lambda: torch.empty(0), lambda: torch.empty(1, 2, 12, 10).transpose(2, 3)):
        grad_input = to_device(make())
        with emulate():
            returned = backward(to_device(grad), (6, 5), (1, 2, 10, 12), False, grad_input=grad_input)
        assert returned is grad_input
        assert grad_input.stride() == backward(grad, (6, 5), (1, 2, 10, 12), False, grad_input=make()).stride()
        assert_near_cpu(grad_input.cpu(), expected)


ERRORS = {
    "grad of another shape": lambda b: b(torch.randn(1, 2, 3, 5), (3, 4), (1, 2, 6, 6), False),
    "3-D grad": lambda b: b(torch.randn(2, 3, 4), (3, 4), (1, 2, 6, 6), False),
    "half grad": lambda b: b(torch.randn(1, 2, 3, 4).half(), (3, 4), (1, 2, 6, 6), False),
    "one output size": lambda b: b(torch.randn(1, 2, 3, 4), (3,), (1, 2, 6, 6), False),
    "three input sizes": lambda b: b(torch.randn(1, 2, 3, 4), (3, 4), (2, 6, 6), False),
    "empty output": lambda b: b(torch.randn(1, 2, 0, 4), (0, 4), (1, 2, 6, 6), False),
    "empty input plane": lambda b: b(torch.randn(1, 2, 3, 4), (3, 4), (1, 2, 0, 6), False),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", ERRORS.values(), ids=ERRORS.keys())
def test_errors_are_the_cpus(mode, case):
    errors_of_cpu_and_ours(lambda: case(BACKWARDS[mode]))


@pytest.mark.parametrize("mode", MODES)
def test_float64_is_refused(mode):
    with pytest.raises(TypeError, match=f"{mode}2d_aa_backward.*float64"), emulate():
        BACKWARDS[mode](to_device(torch.randn(1, 1, 2, 2, dtype=torch.float64)), (2, 2), (1, 1, 4, 4), False)
