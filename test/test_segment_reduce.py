"""torch.segment_reduce and its backward (through autograd) against the CPU:
every reduction, lengths and offsets, batched lengths along axis 1, empty
segments with and without `initial`, ties for max/min, zeros for prod, NaN,
half/bfloat16, and the CPU's errors."""

from __future__ import annotations

import pytest
import torch

import mps_ops
from helpers import assert_matches, run_on_kernels, to_cpu, to_device
from mps_ops.testing import emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"segment_reduce", "_segment_reduce_backward"}

REDUCTIONS = ["sum", "mean", "max", "min", "prod"]


def _case(kind):
    torch.manual_seed(0)
    if kind == "1d":
        return torch.randn(7), dict(lengths=torch.tensor([2, 0, 4, 1]), axis=0)
    if kind == "2d_offsets":
        return torch.randn(6, 3), dict(offsets=torch.tensor([0, 1, 1, 4, 6]), axis=0)
    if kind == "batched_axis1":
        return torch.randn(2, 5, 3), dict(lengths=torch.tensor([[2, 3, 0], [1, 1, 3]]), axis=1)
    if kind == "ties_and_zeros":
        x = torch.tensor([1.0, 3.0, 3.0, 0.0, 2.0, 0.0, 0.0, 5.0])
        return x, dict(lengths=torch.tensor([3, 2, 3]), axis=0)
    if kind == "nan_and_inf":
        # prod's gradient at a NaN is the product of the others (the CPU's
        # rule, as at a zero); a NaN beside a zero; an infinity.
        x = torch.tensor([0.5, float("nan"), 2.0, float("inf"), 1.0, float("nan"), 0.0, 3.0])
        return x, dict(lengths=torch.tensor([3, 2, 3]), axis=0)
    raise ValueError(kind)


@pytest.mark.parametrize("initial", [None, 2.0])
@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("kind", ["1d", "2d_offsets", "batched_axis1", "ties_and_zeros", "nan_and_inf"])
def test_segment_reduce_forward_and_backward(kind, reduce, initial):
    data, kwargs = _case(kind)
    kwargs = dict(kwargs, initial=initial)
    fn = lambda d, **kw: torch.segment_reduce(d, reduce, **kw)  # noqa: E731
    expected = fn(data, **kwargs)
    actual, dispatches = run_on_kernels(fn, data, **kwargs)
    assert_matches(actual, expected)
    assert dispatches

    grad = torch.randn(expected.shape)
    d_ref = data.clone().requires_grad_()
    fn(d_ref, **kwargs).backward(grad)
    d_dev, grad_dev, kw_dev = to_device((data.clone(), grad, kwargs))
    d_dev.requires_grad_()
    with mps_ops.profile() as prof, emulate():
        fn(d_dev, **kw_dev).backward(grad_dev)
    assert_matches(to_cpu(d_dev.grad), d_ref.grad)
    assert any(d.kernel.startswith("segment_reduce_backward") for d in prof.dispatches)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision_and_nan(dtype):
    data = torch.randn(9, 4).to(dtype)
    data[3, 1] = float("nan")
    for reduce in REDUCTIONS:
        fn = lambda d: torch.segment_reduce(d, reduce, lengths=torch.tensor([3, 0, 6], device=d.device))  # noqa: E731
        assert_matches(run_on_kernels(fn, data)[0], fn(data))


def test_errors_are_the_cpus():
    x = torch.randn(5)
    for kwargs in [dict(lengths=torch.tensor([2, 2])), dict(lengths=torch.tensor([2, -1, 4]))]:
        with pytest.raises(RuntimeError) as cpu:
            torch.segment_reduce(x, "sum", **kwargs)
        with pytest.raises(RuntimeError, match=str(cpu.value)[:30].replace("(", r"\(").replace(")", r"\)")):
            run_on_kernels(lambda d, kw: torch.segment_reduce(d, "sum", **kw), x, kwargs)
    with pytest.raises(RuntimeError, match="reduce argument"):
        run_on_kernels(lambda d: torch.segment_reduce(d, "foo", lengths=torch.tensor([5], device=d.device)), x)
    # unsafe: the lengths are not checked (the CPU does not check them either).
    expected = torch.segment_reduce(x, "sum", lengths=torch.tensor([2, 2]), unsafe=True)
    actual, _ = run_on_kernels(lambda d: torch.segment_reduce(d, "sum", lengths=torch.tensor([2, 2], device=d.device),
                                                               unsafe=True), x)
    assert_matches(actual, expected)
