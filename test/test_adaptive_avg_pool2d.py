"""Adaptive 2-D average pooling (the repair of the stock MPS kernel, which
raises where the input size is not a multiple of the output size) against
the CPU: sizes that do and do not divide, channels-last and strided inputs,
3-D inputs, empty batches, out=, gradients, adaptive_avg_pool1d and
interpolate(mode="area") on top of it, and the CPU's errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import mps_ops
from helpers import assert_matches, errors_of_cpu_and_ours, to_cpu, to_device
from mps_ops.testing import emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_adaptive_avg_pool2d"}

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
METAL_TYPE = {torch.float32: "float", torch.float16: "half", torch.bfloat16: "bfloat"}


def _ours(fn, *args, **kwargs):
    args, kwargs = to_device((args, kwargs))
    with mps_ops.profile() as prof, emulate():
        result = fn(*args, **kwargs)
    return result, [d.kernel for d in prof.dispatches]


def test_active_by_default_as_a_repair():
    (record,) = [r for r in mps_ops.ops() if r.name == "aten::_adaptive_avg_pool2d"]
    assert record.policy == "repair" and record.active, record.status
    assert record.status.startswith("repairs torch")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("in_size, out_size", [
    ((7, 10), (3, 4)), ((14, 14), (7, 7)), ((5, 3), (5, 3)), ((4, 6), (8, 9)), ((9, 1), (2, 1)), ((1, 13), (1, 5)),
])
def test_sizes_that_do_and_do_not_divide(dtype, in_size, out_size):
    x = torch.randn(2, 3, *in_size).to(dtype)
    actual, kernels = _ours(F.adaptive_avg_pool2d, x, out_size)
    metal = METAL_TYPE[dtype]
    assert kernels == [f"adaptive_avg_pool3d_dense_{metal}_{metal}"]
    assert_matches(to_cpu(actual), F.adaptive_avg_pool2d(x, out_size))


@pytest.mark.parametrize("layout", ["channels_last", "transposed", "sliced", "3-D", "empty batch"])
def test_layouts_and_memory_format(layout):
    base = torch.randn(3, 5, 11, 9)
    x = {
        "channels_last": base.contiguous(memory_format=torch.channels_last),
        "transposed": base.transpose(-1, -2),
        "sliced": base[:, ::2, 1:, ::2],
        "3-D": base[0],
        "empty batch": base[:0],
    }[layout]
    expected = F.adaptive_avg_pool2d(x, (4, 5))
    actual, _ = _ours(F.adaptive_avg_pool2d, x, (4, 5))
    actual = to_cpu(actual)
    assert_matches(actual, expected)
    assert actual.stride() == expected.stride(), "the CPU's memory format"


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gradients(dtype, memory_format):
    x = torch.randn(2, 4, 13, 10).to(dtype).contiguous(memory_format=memory_format).requires_grad_()
    grad = torch.randn(2, 4, 5, 3).to(dtype)
    expected, = torch.autograd.grad(F.adaptive_avg_pool2d(x, (5, 3)), x, grad)
    xd, gd = to_device((x.detach(), grad))
    xd.requires_grad_()
    with mps_ops.profile() as prof, emulate():
        actual, = torch.autograd.grad(F.adaptive_avg_pool2d(xd, (5, 3)), xd, gd)
    assert any(k.startswith("adaptive_avg_pool3d_backward") for k in prof.kernels())
    actual = to_cpu(actual)
    assert_matches(actual, expected)
    assert actual.stride() == expected.stride()


def test_out_variant_resizes_and_takes_the_memory_format():
    x = torch.randn(2, 3, 7, 7).contiguous(memory_format=torch.channels_last)
    expected = torch.empty(0)
    torch._C._nn.adaptive_avg_pool2d(x, (3, 2), out=expected)
    out = to_device(torch.empty(0))
    (xd,) = to_device((x,))
    with emulate():
        returned = torch._C._nn.adaptive_avg_pool2d(xd, (3, 2), out=out)
    assert returned is out
    assert_matches(to_cpu(out), expected)
    assert out.stride() == expected.stride()


def test_pool1d_and_area_interpolation_reach_it():
    x = torch.randn(2, 3, 17)
    actual, kernels = _ours(F.adaptive_avg_pool1d, x, 5)
    assert kernels
    assert_matches(to_cpu(actual), F.adaptive_avg_pool1d(x, 5))
    image = torch.randn(1, 2, 19, 23)
    actual, kernels = _ours(F.interpolate, image, size=(7, 10), mode="area")
    assert kernels
    assert_matches(to_cpu(actual), F.interpolate(image, size=(7, 10), mode="area"))


FORWARD = torch.ops.aten._adaptive_avg_pool2d.default
BACKWARD = torch.ops.aten._adaptive_avg_pool2d_backward.default


# The CPU's words after the op's name: the CPU's backward names its internal
# function (adaptive_avg_pool2d_backward_out_cpu_template), ours the op.
# Where ours differs on purpose: a negative size (the CPU's kernel says
# "numel: integer multiplication overflow", ours what torch's own
# adaptive_avg_pool2d says, which checks first) and a dtype the op lacks
# (ours also names the device).
@pytest.mark.parametrize("op, args, same_words", [
    (FORWARD, (torch.randn(2, 3, 4, 4), [2]), True),                          # output_size of one
    (FORWARD, (torch.randn(2, 3, 4, 4), [2, -1]), False),                     # a negative size
    (FORWARD, (torch.randn(3, 4), [2, 2]), True),                             # 2-D input
    (FORWARD, (torch.randn(1, 2, 3, 4, 4), [2, 2]), True),                    # 5-D input
    (FORWARD, (torch.randn(2, 3, 0, 4), [2, 2]), True),                       # no rows
    (FORWARD, (torch.randint(0, 5, (2, 3, 4, 4)), [2, 2]), False),            # integers
    (BACKWARD, (torch.randn(2, 3, 2, 0), torch.randn(2, 3, 4, 4)), True),     # empty grad_output
    (BACKWARD, (torch.randn(3, 2, 2).half(), torch.randn(3, 4, 4)), True),   # dtypes differ
    (BACKWARD, (torch.randn(6, 2), torch.randn(3, 4, 4)), True),              # dims differ
    (BACKWARD, (torch.randn(6, 2), torch.randn(6, 2)), True),                 # 2-D
    (BACKWARD, (torch.randn(1, 2, 3, 2, 2), torch.randn(1, 2, 3, 4, 4)), True),  # 5-D
    (BACKWARD, (torch.randint(0, 3, (3, 2, 2)), torch.randint(0, 3, (3, 4, 4))), False),  # integers
])
def test_errors_are_the_cpus(op, args, same_words):
    cpu, ours = errors_of_cpu_and_ours(op, *args)
    words = lambda error: str(error).split(": ", 1)[-1].replace("\"", "")  # noqa: E731
    if same_words:
        assert words(ours) == words(cpu)
    else:
        assert "adaptive_avg_pool2d" in str(ours)


def test_a_backward_with_another_batch_is_refused():
    """The CPU reads grad_output's batch and channels as self's without a
    check; ours refuses."""
    args = to_device((torch.randn(1, 3, 2, 2), torch.randn(2, 3, 4, 4)))
    with pytest.raises(RuntimeError, match="expected grad_output's batch and channel sizes"), emulate():
        BACKWARD(*args)
