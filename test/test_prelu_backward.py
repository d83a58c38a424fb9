"""_prelu_kernel_backward (PReLU's backward, an override op) against the CPU:
slopes per element, per channel and one for all, broadcast, contiguous,
channels-last, transposed and strided operands, 0-dim and empty ones, NaN,
-0 and infinities, half and bfloat16, and the CPU's errors. Its gradients
through nn.functional.prelu's OpInfo with the forward or both overrides on:
test_overrides.py."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_matches, in_layout, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_prelu_kernel_backward"}

backward = torch.ops.aten._prelu_kernel_backward


def _check(grad, x, weight, where):
    expected = backward(grad, x, weight)
    actual, dispatches = run_on_kernels(backward, grad, x, weight)
    for a, e in zip(actual, expected):
        assert a.stride() == e.stride() or a.numel() <= 1, where
    assert_matches(list(actual), list(expected), where)
    assert dispatches or expected[0].numel() == 0, where
    assert all(d.op == "prelu_backward" for d in dispatches), [d.kernel for d in dispatches]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "channels_last"])
@pytest.mark.parametrize("slopes", ["element", "channel", "one"])
def test_layouts_dtypes_and_slopes(dtype, layout, slopes):
    torch.manual_seed(0)
    x = torch.randn(4, 6, 5, 3).to(dtype)
    x[0, 0, 0, 0] = float("nan")
    x[0, 1, 0, 0] = -0.0
    grad = torch.randn(4, 6, 5, 3).to(dtype)
    if layout == "channels_last":
        x, grad = x.to(memory_format=torch.channels_last), grad.to(memory_format=torch.channels_last)
    else:
        x, grad = in_layout(x, layout), in_layout(grad, layout)
    weight = {"element": torch.rand(4, 6, 5, 3), "channel": torch.rand(6, 1, 1),
              "one": torch.rand(1)}[slopes].to(dtype)
    _check(grad, x, weight, f"{dtype} {layout} {slopes}")


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_special_values_in_every_operand(value):
    torch.manual_seed(0)
    x, grad, weight = torch.randn(3, 4), torch.randn(3, 4), torch.rand(1, 4)
    x[0, 0], grad[1, 1], weight[0, 2] = value, value, value
    _check(grad, x, weight, f"{value}")


@pytest.mark.parametrize("shape, weight_shape", [((), ()), ((0, 3), (1, 3)), ((3, 0), (3, 1)), ((7,), (1,)),
                                                 ((2, 1), (1, 5))])
def test_shapes(shape, weight_shape):
    """Shapes that broadcast (the gradients take the broadcast shape, as the
    CPU's), 0-dim and empty ones."""
    torch.manual_seed(0)
    out_shape = torch.broadcast_shapes(shape, weight_shape)
    _check(torch.randn(out_shape), torch.randn(shape), torch.rand(weight_shape), f"{shape} {weight_shape}")


def test_autograd_through_prelu():
    """F.prelu with both overrides on: the input's and the weight's
    gradients (the weight's summed to its shape by autograd) as the CPU's."""
    torch.manual_seed(0)
    x = torch.randn(4, 3, 5, 5, requires_grad=True)
    w = torch.rand(3, requires_grad=True)
    grad = torch.randn(4, 3, 5, 5)

    def step(x, w, grad):
        out = torch.nn.functional.prelu(x, w)
        return (out, *torch.autograd.grad(out, (x, w), grad))

    expected = step(x, w, grad)
    actual, dispatches = run_on_kernels(step, x, w, grad)
    assert_matches(list(actual), list(expected), "autograd")
    assert {"prelu", "prelu_backward"} <= {d.op for d in dispatches}


@pytest.mark.parametrize("call", [
    lambda g, x, w: backward(g, x.half(), w),  # dtypes differ: RuntimeError
    lambda g, x, w: backward(g.half(), x, w),  # grad's dtype differs
    lambda g, x, w: backward(g.long(), x.long(), w.long()),  # integers: NotImplementedError
    lambda g, x, w: backward(g, x, torch.rand(4)),  # shapes do not broadcast
], ids=["dtypes", "grad dtype", "integers", "shapes"])
def test_errors_are_the_cpus(call):
    g, x, w = torch.randn(2, 3), torch.randn(2, 3), torch.rand(1, 3)
    with pytest.raises(Exception) as cpu_error:
        call(g, x, w)
    with pytest.raises(Exception) as our_error:
        run_on_kernels(call, g, x, w)
    assert type(our_error.value) is type(cpu_error.value), (our_error.value, cpu_error.value)
