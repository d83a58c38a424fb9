"""multi_margin_loss forward and backward (through autograd) against the CPU
on what OpInfo leaves out: p = 2, weights, margins, every reduction, 1-D and
0-dim inputs, strided inputs, many classes (several SIMD groups per sample),
out= forms, and the CPU's errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import mps_ops
from helpers import assert_at_least_as_accurate, assert_matches, run_on_kernels, to_cpu, to_device
from mps_ops.testing import emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {
    "multi_margin_loss", "multilabel_margin_loss_forward", "multilabel_margin_loss_backward",
}


def _case(kind):
    torch.manual_seed(0)
    if kind == "matrix":
        return torch.randn(6, 9), torch.randint(0, 9, (6,))
    if kind == "many_classes":
        return torch.randn(3, 700) * 0.05, torch.randint(0, 700, (3,))
    # share threads per sample (row_threads): 8, 32 samples per group, the
    # last group partly past the last sample; 64, four per group, their
    # SIMD groups' sums meeting in threadgroup memory.
    if kind == "many_short_samples":
        return torch.randn(70, 40), torch.randint(0, 40, (70,))
    if kind == "long_samples":
        return torch.randn(5, 1100), torch.randint(0, 1100, (5,))
    # Past a group's 256 threads of 32 classes each: a thread's classes in
    # two blocks (margin_losses.metal's class_block), the second partial.
    if kind == "two_blocks_per_thread":
        return torch.randn(2, 8300), torch.tensor([8299, 4])
    if kind == "strided":
        return torch.randn(6, 18)[:, ::2], torch.randint(0, 9, (12,))[::2]
    if kind == "vector":
        return torch.randn(7), torch.tensor([3])
    if kind == "vector_scalar_target":
        return torch.randn(7), torch.tensor(5)
    if kind == "zero_dim":
        return torch.tensor(0.3), torch.tensor(0)
    raise ValueError(kind)


LONG_SUMS = {"two_blocks_per_thread"}
KINDS = ["matrix", "many_classes", "many_short_samples", "long_samples", "two_blocks_per_thread", "strided", "vector", "vector_scalar_target", "zero_dim"]


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("p, margin, weighted", [(1, 1.0, False), (2, 0.5, True), (1, 2.0, True)])
@pytest.mark.parametrize("kind", KINDS)
def test_multi_margin_loss_forward_and_backward(kind, p, margin, weighted, reduction):
    x, y = _case(kind)
    c = x.shape[-1] if x.dim() else 1
    weight = torch.rand(c) + 0.5 if weighted else None

    def fn(x_, y_, w_):
        return F.multi_margin_loss(x_, y_, p=p, margin=margin, weight=w_, reduction=reduction)

    expected = fn(x, y, weight)
    actual, dispatches = run_on_kernels(fn, x, y, weight)
    assert_matches(actual, expected)
    assert dispatches

    grad = torch.randn(expected.shape)
    x_ref = x.clone().requires_grad_()
    fn(x_ref, y, weight).backward(grad)
    x_dev, y_dev, w_dev, grad_dev = to_device((x.clone(), y, weight, grad))
    x_dev.requires_grad_()
    with mps_ops.profile() as prof, emulate():
        fn(x_dev, y_dev, w_dev).backward(grad_dev)
    if kind in LONG_SUMS:
        # Each target's gradient sums some 8300 terms: the CPU, in order,
        # drifts by up to 8e-5 from the float64 truth, ours by under 3e-7.
        # Those entries are held to the CPU's accuracy, every other (one term
        # each) to the CPU's result.
        x_64 = x.double().requires_grad_()
        fn(x_64, y, weight.double() if weighted else None).backward(grad.double())
        ours, targets = to_cpu(x_dev.grad), (torch.arange(x.size(0)), y)
        assert_at_least_as_accurate(ours[targets], x_ref.grad[targets], x_64.grad[targets])
        others = torch.ones_like(ours, dtype=torch.bool).index_put_(targets, torch.tensor(False))
        assert_matches(ours[others], x_ref.grad[others])
    else:
        assert_matches(to_cpu(x_dev.grad), x_ref.grad)
    assert any(d.kernel.startswith("multi_margin_loss_backward") for d in prof.dispatches)


def test_empty_batch():
    x, y = torch.randn(0, 4), torch.zeros(0, dtype=torch.long)
    actual, dispatches = run_on_kernels(lambda a, b: F.multi_margin_loss(a, b, reduction="none"), x, y)
    assert actual.shape == (0,) and not dispatches
    # The sum over no samples is 0. (Their mean is NaN here; the CPU returns an
    # unspecified value, so it is not compared.)
    actual, _ = run_on_kernels(lambda a, b: F.multi_margin_loss(a, b, reduction="sum"), x, y)
    assert actual.item() == 0.0


def test_out_forms():
    x, y = _case("matrix")
    out = torch.empty(12)[::2]
    expected = torch.ops.aten.multi_margin_loss(x, y, 1, 1, None, 0)
    actual, _ = run_on_kernels(lambda a, b, o: torch.ops.aten.multi_margin_loss.out(a, b, 1, 1, None, 0, out=o),
                               x, y, out)
    assert_matches(actual, expected)


def test_errors_are_the_cpus():
    x, y = _case("matrix")
    for args, kwargs in [
        ((x, torch.tensor([0, 9, 1, 2, 3, 4])), {}),
        ((x, torch.tensor([0, -1, 1, 2, 3, 4])), {}),
        ((x, y[:5]), {}),
        ((x, y), {"weight": torch.ones(3)}),
        ((x, y.int()), {}),
        ((torch.randn(2, 3, 4), y), {}),
        ((torch.randn(3, 0), y[:3]), {}),
        ((x, y), {"p": 3}),
        ((x.half(), y), {}),
    ]:
        with pytest.raises(Exception) as cpu:
            F.multi_margin_loss(*args, **kwargs)
        with pytest.raises(type(cpu.value)):
            run_on_kernels(lambda *a: F.multi_margin_loss(*a, **kwargs), *args)


# --- multilabel_margin_loss -------------------------------------------------------

def _labels(n, c, seed=0):
    """Rows of targets: some labels, a -1, then leftovers the loss ignores;
    one row lists a label twice, one row lists every class."""
    g = torch.Generator().manual_seed(seed)
    target = torch.randint(0, c, (n, c), generator=g)
    for i in range(n):
        stop = int(torch.randint(0, c + 1, (1,), generator=g))
        if stop < c:
            target[i, stop] = -1
    target[0, :3] = torch.tensor([1, 1, -1])
    if n > 1:
        target[1] = torch.randperm(c, generator=g)
    return target


ML_CASES = {
    "matrix": lambda: (torch.randn(5, 6), _labels(5, 6)),
    "many_classes": lambda: (torch.randn(3, 300) * 0.01, _labels(3, 300)),
    "strided": lambda: (torch.randn(5, 12)[:, ::2], _labels(5, 6)),
    "vector": lambda: (torch.randn(6), _labels(2, 6)[0]),
    "zero_dim": lambda: (torch.tensor(0.5), torch.tensor(0)),
}


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("kind", list(ML_CASES))
def test_multilabel_margin_loss_forward_and_backward(kind, reduction):
    x, y = ML_CASES[kind]()

    def fn(x_, y_):
        return torch.ops.aten.multilabel_margin_loss_forward(
            x_, y_, {"none": 0, "mean": 1, "sum": 2}[reduction])

    expected = fn(x, y)
    actual, dispatches = run_on_kernels(fn, x, y)
    assert_matches(actual, expected)
    assert dispatches

    grad = torch.randn(expected[0].shape)
    x_ref = x.clone().requires_grad_()
    F.multilabel_margin_loss(x_ref, y, reduction=reduction).backward(grad)
    x_dev, y_dev, grad_dev = to_device((x.clone(), y, grad))
    x_dev.requires_grad_()
    with mps_ops.profile() as prof, emulate():
        F.multilabel_margin_loss(x_dev, y_dev, reduction=reduction).backward(grad_dev)
    assert_matches(to_cpu(x_dev.grad), x_ref.grad)
    assert any(d.kernel.startswith("multilabel_margin_loss_backward") for d in prof.dispatches)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_multilabel_backward_reads_is_target_as_given(reduction):
    """is_target need not be the forward's record: a listed class may be
    unmarked, so both of its terms (it violates others' margins and others
    violate its own) count; a label listed twice counts twice."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(6, 40, generator=g) * 0.3
    y = _labels(6, 40, seed=4)
    is_target = (torch.rand(6, 40, generator=g) < 0.5).float()
    grad = torch.rand(6 if reduction == 0 else (), generator=g) + 0.5

    def fn(grad_, x_, y_, is_target_):
        return torch.ops.aten.multilabel_margin_loss_backward(grad_, x_, y_, reduction, is_target_)

    expected = fn(grad, x, y, is_target)
    actual, dispatches = run_on_kernels(fn, grad, x, y, is_target)
    assert_matches(actual, expected)
    assert any(d.kernel.startswith("multilabel_margin_loss_backward") for d in dispatches)


def test_multilabel_errors_are_the_cpus():
    x, y = ML_CASES["matrix"]()
    bad_label, below = y.clone(), y.clone()
    bad_label[2, -1] = 6  # after the row's -1 too: the CPU checks every element
    below[3, 0] = -2
    for args in [(x, bad_label), (x, below), (x, y[:4]), (x, y.int()), (torch.randn(2, 3, 4), y),
                 (torch.randn(2, 0), torch.zeros(2, 0, dtype=torch.long)), (x.half(), y)]:
        with pytest.raises(Exception) as cpu:
            F.multilabel_margin_loss(*args)
        with pytest.raises(type(cpu.value)):
            run_on_kernels(F.multilabel_margin_loss, *args)
