"""_upsample_lanczos2d_aa and its backward against the CPU (no OpInfo covers
them): down- and upsampling, one axis or both, given scales and
align_corners, channels-last, transposed and strided inputs, empty batches,
uint8 bit for bit, float32 within the CPU's own rounding (its build fuses
multiply-adds), the backward through autograd of F.interpolate, out= forms,
and the CPU's errors."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_matches, run_on_kernels, to_device
from mps_ops.testing import emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_upsample_lanczos2d_aa"}

# The operator is new in torch 2.12; on older releases the registry skips it.
pytestmark = pytest.mark.skipif(not hasattr(torch.ops.aten, "_upsample_lanczos2d_aa"),
                                reason="this torch has no _upsample_lanczos2d_aa (new in 2.12)")
forward = getattr(torch.ops.aten, "_upsample_lanczos2d_aa", None)
backward = getattr(torch.ops.aten, "_upsample_lanczos2d_aa_backward", None)

RESIZES = [
    ((2, 3, 17, 23), (8, 9), False, None),       # both axes down
    ((1, 2, 8, 8), (19, 13), False, None),       # both up
    ((1, 1, 30, 7), (30, 21), False, None),      # width only
    ((1, 3, 9, 40), (4, 40), False, None),       # height only
    ((2, 5, 13, 11), (5, 29), False, None),      # down and up; five channels (the CPU's generic uint8 path)
    ((1, 2, 12, 10), (7, 4), True, None),        # align_corners
    ((1, 2, 12, 10), (5, 25), False, (0.4, 2.5)),  # given scales
    ((1, 1, 64, 3), (5, 3), False, None),        # a wide window: 2 * ceil(3 * 12.8) + 1 taps
    ((0, 2, 6, 6), (3, 3), False, None),         # an empty batch
]


def _layouts(shape, dtype):
    make = (lambda s: torch.randn(s)) if dtype == torch.float32 else (lambda s: torch.randint(0, 256, s))
    n, c, h, w = shape
    yield "contiguous", make(shape).to(dtype)
    yield "channels_last", make(shape).to(dtype).contiguous(memory_format=torch.channels_last)
    yield "transposed", make((n, c, w, h)).to(dtype).transpose(2, 3)
    yield "strided", make((n, c, h, 2 * w)).to(dtype)[..., ::2]


@pytest.mark.parametrize("dtype", [torch.float32, torch.uint8])
@pytest.mark.parametrize("shape, size, align_corners, scales", RESIZES)
def test_forward_matches_the_cpu(shape, size, align_corners, scales, dtype):
    torch.manual_seed(0)
    scale_args = scales or (None, None)
    for layout, x in _layouts(shape, dtype):
        expected = forward(x, size, align_corners, *scale_args)
        actual, dispatches = run_on_kernels(forward, x, size, align_corners, *scale_args)
        assert dispatches or x.numel() == 0, layout
        assert actual.stride() == expected.stride(), layout
        if dtype == torch.uint8:
            assert torch.equal(actual, expected), layout
        else:
            torch.testing.assert_close(actual, expected, rtol=1e-6, atol=1e-6, msg=layout)


@pytest.mark.parametrize("shape, size, align_corners, scales", RESIZES)
def test_backward_matches_the_cpu(shape, size, align_corners, scales):
    torch.manual_seed(1)
    scale_args = scales or (None, None)
    grad = torch.randn(shape[0], shape[1], *size)
    for layout, g in (("contiguous", grad), ("transposed", grad.transpose(2, 3).contiguous().transpose(2, 3))):
        expected = backward(g, size, shape, align_corners, *scale_args)
        actual, dispatches = run_on_kernels(backward, g, size, shape, align_corners, *scale_args)
        assert dispatches or g.numel() == 0
        torch.testing.assert_close(actual, expected, rtol=1e-6, atol=1e-6, msg=layout)


def test_interpolate_and_its_gradient():
    torch.manual_seed(2)
    x = torch.randn(2, 3, 21, 14, requires_grad=True)
    expected = torch.nn.functional.interpolate(x, size=(9, 30), mode="lanczos", antialias=True)
    expected.square().sum().backward()
    ours = to_device(x.detach()).requires_grad_()
    with emulate():
        actual = torch.nn.functional.interpolate(ours, size=(9, 30), mode="lanczos", antialias=True)
        actual.square().sum().backward()
    torch.testing.assert_close(actual.detach(), expected.detach(), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(ours.grad, x.grad, rtol=1e-5, atol=1e-5)


def test_out_forms():
    torch.manual_seed(3)
    x = torch.randn(1, 2, 10, 12)

    def into(out):
        returned = forward(x_dev, (6, 5), False, out=out)
        assert returned is out
        return out

    x_dev = to_device(x)
    for make_out in (lambda: torch.empty(0), lambda: torch.empty(1, 2, 5, 6).transpose(2, 3)):
        out = to_device(make_out())
        with emulate():
            into(out)
        assert_matches(out.cpu(), forward(x, (6, 5), False))
    grad = torch.randn(1, 2, 6, 5)
    grad_input = to_device(torch.empty(1, 2, 12, 10).transpose(2, 3))
    with emulate():
        returned = backward(to_device(grad), (6, 5), (1, 2, 10, 12), False, grad_input=grad_input)
    assert returned is grad_input
    torch.testing.assert_close(grad_input.cpu(), backward(grad, (6, 5), (1, 2, 10, 12), False),
                               rtol=1e-6, atol=1e-6)


def test_resized_out_takes_the_inputs_memory_format():
    """The CPU's structured out: one it resizes takes the input's suggested
    format (channels-last in, channels-last out); one of the right size keeps
    its strides. (A resized out came out contiguous.)"""
    torch.manual_seed(4)
    x = torch.randn(2, 3, 5, 4).contiguous(memory_format=torch.channels_last)
    for size, make_out in (((7, 6), lambda: torch.empty(0)), ((5, 4), lambda: torch.empty(0)),
                           ((7, 6), lambda: torch.empty(2, 3, 7, 6))):
        expected = make_out()
        forward(x, size, False, out=expected)
        out = to_device(make_out())
        with emulate():
            forward(to_device(x), size, False, out=out)
        assert out.stride() == expected.stride(), (size, out.stride(), expected.stride())
        assert_matches(out.cpu(), expected)


def test_same_size_is_a_copy_for_any_dtype():
    x = torch.randn(1, 2, 5, 6).half()
    actual, _ = run_on_kernels(forward, x, (5, 6), False)
    assert torch.equal(actual, forward(x, (5, 6), False))


@pytest.mark.parametrize("case", ["input_3d", "size_1", "zero_size", "no_channels", "half", "grad_shape",
                                  "grad_3d", "grad_half"])
def test_errors_are_the_cpus(case):
    x, size = torch.randn(1, 2, 6, 6), (3, 4)
    call = lambda t: forward(t, size, False)  # noqa: E731
    if case == "input_3d":
        x = torch.randn(2, 6, 6)
    elif case == "size_1":
        size = (3,)
    elif case == "zero_size":
        size = (0, 4)
    elif case == "no_channels":
        x = torch.randn(1, 0, 6, 6)
    elif case == "half":
        x = x.half()
    elif case.startswith("grad"):
        x = {"grad_shape": torch.randn(1, 2, 3, 5), "grad_3d": torch.randn(2, 3, 4),
             "grad_half": torch.randn(1, 2, 3, 4).half()}[case]
        call = lambda g: backward(g, size, (1, 2, 6, 6), False)  # noqa: E731
    with pytest.raises(Exception) as cpu_error:
        call(x)
    with pytest.raises(Exception) as our_error, emulate():
        call(to_device(x))
    assert type(our_error.value) is type(cpu_error.value), (our_error.value, cpu_error.value)


def test_float64_is_refused():
    with pytest.raises(TypeError, match="lanczos.*float64"), emulate():
        forward(to_device(torch.randn(1, 1, 4, 4, dtype=torch.float64)), (2, 2), False)
