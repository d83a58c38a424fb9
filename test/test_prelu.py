"""_prelu_kernel (PReLU's forward, an override op) against the CPU: slopes
per channel and one for all, broadcast both ways, transposed and strided
inputs, 0-dim and empty ones, NaN, and half/bfloat16. Its gradients
through nn.functional.prelu's OpInfo: test_overrides.py."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_matches, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_prelu_kernel"}


def _check(x, weight):
    expected = torch._prelu_kernel(x, weight)
    actual, dispatches = run_on_kernels(torch._prelu_kernel, x, weight)
    assert_matches(actual, expected, f"{tuple(x.shape)} {x.dtype} weight {tuple(weight.shape)}")
    assert dispatches or expected.numel() == 0
    assert all(d.op == "prelu" for d in dispatches), [d.kernel for d in dispatches]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_layouts_and_dtypes(dtype, layout):
    torch.manual_seed(0)
    x = torch.randn(4, 6, 5).to(dtype)
    x[0, 0, 0] = float("nan")
    if layout == "transposed":
        x = x.transpose(0, 2).contiguous().transpose(0, 2)
    elif layout == "strided":
        x = torch.randn(4, 6, 10).to(dtype)[..., ::2]
    _check(x, torch.rand(6).reshape(1, 6, 1).to(dtype))  # one slope per channel
    _check(x, torch.rand(1).reshape(1, 1, 1).to(dtype))  # one slope for all


@pytest.mark.parametrize("layout", ["channels_last", "transposed"])
def test_the_result_keeps_the_inputs_layout(layout):
    """A slope per channel broadcasts: the result is laid out as the CPU's
    iterator lays it out, by the input (it came out contiguous)."""
    x = torch.randn(2, 3, 4, 5)
    x = x.to(memory_format=torch.channels_last) if layout == "channels_last" else x.transpose(1, 3)
    weight = torch.rand(x.shape[1]).reshape(1, -1, 1, 1)
    expected = torch._prelu_kernel(x, weight)
    actual, dispatches = run_on_kernels(torch._prelu_kernel, x, weight)
    assert_matches(actual, expected)
    assert dispatches and actual.stride() == expected.stride(), (actual.stride(), expected.stride())


@pytest.mark.parametrize("shape, weight_shape", [((), ()), ((0, 3), (1, 3)), ((3, 0), (3, 1)), ((7,), (1,)),
                                                 ((2, 1), (1, 5))])
def test_shapes(shape, weight_shape):
    torch.manual_seed(0)
    _check(torch.randn(shape), torch.rand(weight_shape))


@pytest.mark.parametrize("call", [
    lambda x, w: torch._prelu_kernel(x.half(), w),  # dtypes differ: RuntimeError
    lambda x, w: torch._prelu_kernel(x.long(), w.long()),  # integers: NotImplementedError
    lambda x, w: torch._prelu_kernel(x, torch.rand(4)),  # shapes do not broadcast
    # Integers whose shapes do not broadcast: the iterator's shape check first.
    lambda x, w: torch._prelu_kernel(x.int(), torch.ones(4, dtype=torch.int32)),
], ids=["dtypes", "integers", "shapes", "integer_shapes"])
def test_errors_are_the_cpus(call):
    x, w = torch.randn(2, 3), torch.rand(1, 3)
    with pytest.raises(Exception) as cpu_error:
        call(x, w)
    with pytest.raises(Exception) as our_error:
        run_on_kernels(call, x, w)
    assert type(our_error.value) is type(cpu_error.value), (our_error.value, cpu_error.value)
