"""nll_loss and nll_loss2d, forward and backward (override ops), against
the CPU: every reduction, with and without class weights, ignore_index
(default, a class, absent), long and uint8 targets, 1-D inputs with a 0-dim
target, empty batches, every target ignored (the mean's 0 / 0), many
targets (several threadgroups of the mean's first pass), non-contiguous
inputs, half and bfloat16, out= forms, and the CPU's errors (bad target
values included, checked after the kernels). OpInfo samples and
gradients (nll_loss, cross_entropy): test_opinfo.py and test_overrides.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import mps_ops

from helpers import assert_at_least_as_accurate, assert_matches, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward", "nll_loss2d_backward"}

aten = torch.ops.aten
REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _inputs(shape, dtype=torch.float32, target_dtype=torch.long, ignore=-100, layout="contiguous"):
    """Log-probabilities of `shape` (classes in dim 1, or dim 0 of a 1-D
    input) and targets, every third one `ignore`."""
    torch.manual_seed(0)
    x = torch.randn(shape).log_softmax(1 if len(shape) > 1 else 0).to(dtype)
    classes = shape[1] if len(shape) > 1 else shape[0]
    target = torch.randint(0, classes, shape[:1] + shape[2:] if len(shape) > 1 else ())
    if target.numel() > 0:
        target.view(-1)[::3] = ignore
    if layout == "transposed":
        x = x.transpose(0, 1).contiguous().transpose(0, 1)
    elif layout == "strided":
        wide = torch.empty(shape[:-1] + (2 * shape[-1],), dtype=x.dtype)
        wide[..., ::2] = x
        x = wide[..., ::2]
        target = torch.stack([target, target], -1)[..., 0]
    return x, target.to(target_dtype)


def _forward_op(x):
    return aten.nll_loss2d_forward if x.dim() == 4 else aten.nll_loss_forward


def _backward_op(x):
    return aten.nll_loss2d_backward if x.dim() == 4 else aten.nll_loss_backward


def _compare(actual, expected, fn, args, where):
    try:
        assert_matches(actual, expected, where)
    except AssertionError:
        if expected[0].dtype == torch.float32:
            raise
        wide = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
        assert_at_least_as_accurate(actual, expected, fn(*wide), where)


def _check(shape, reduction, weighted=True, dtype=torch.float32, target_dtype=torch.long, ignore=-100,
           layout="contiguous"):
    x, target = _inputs(shape, dtype, target_dtype, ignore, layout)
    weight = torch.rand(shape[1] if len(shape) > 1 else shape[0]).to(dtype) if weighted else None
    ignore_index = ignore
    red = REDUCTIONS[reduction]
    where = f"{tuple(shape)} {reduction} weighted={weighted} {dtype} {target_dtype} ignore={ignore} {layout}"

    forward = lambda x, t, w: _forward_op(x)(x, t, w, red, ignore_index)  # noqa: E731
    expected = forward(x, target, weight)
    actual, dispatches = run_on_kernels(forward, x, target, weight)
    _compare(actual, expected, forward, (x, target, weight), where)
    assert dispatches or x.numel() == 0, where

    out, total_weight = expected
    grad = torch.randn(out.shape).to(dtype)
    backward = lambda g, x, t, w, tw: _backward_op(x)(g, x, t, w, red, ignore_index, tw)  # noqa: E731
    args = (grad, x, target, weight, total_weight)
    # The CPU's nll_loss2d_backward makes its grad_input like a permuted x
    # and then refuses it as non-contiguous; ours is contiguous.
    expected_grad = backward(grad, x.contiguous(), target, weight, total_weight)
    actual_grad, dispatches = run_on_kernels(backward, *args)
    _compare((actual_grad,), (expected_grad,), lambda *a: (backward(*a),), args, where + " backward")
    # nll_loss2d's backward over more than one position writes every element
    # (nll_loss_backward_planes); the rest zero-fill and scatter.
    spatial = x.dim() == 4 and x.shape[2] * x.shape[3] > 1
    kernel = "nll_loss_backward_planes" if spatial else "nll_loss_backward"
    assert any(d.op == kernel for d in dispatches) or target.numel() == 0, where


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("shape", [(6, 5), (5,), (2, 3, 4, 5), (0, 4), (0, 3, 2, 2)], ids=str)
def test_reductions_weights_and_shapes(shape, reduction, weighted):
    _check(shape, reduction, weighted)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("ignore", [-100, 0, 2, 7], ids=lambda i: f"ignore{i}")
def test_ignore_index(reduction, ignore):
    _check((9, 4), reduction, ignore=ignore)
    _check((3, 4, 3, 3), reduction, ignore=ignore)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [True, False])
def test_one_dim_input(reduction, weighted):
    """A 1-D input and a 0-dim target (nothing ignored): one term, and
    total_weight its weight even unreduced, as the CPU's scalar path."""
    x, w = torch.randn(5).log_softmax(0), torch.rand(5) if weighted else None
    for target, ignore_index in ((torch.tensor(2), -100), (torch.tensor(2), 2)):
        fn = lambda x, t, w: aten.nll_loss_forward(x, t, w, REDUCTIONS[reduction], ignore_index)  # noqa: E731
        actual, dispatches = run_on_kernels(fn, x, target, w)
        assert_matches(actual, fn(x, target, w), f"{reduction} ignore_index {ignore_index}")
        assert dispatches


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_every_target_ignored(reduction):
    """The mean divides 0 by a total weight of 0: NaN, as on the CPU."""
    x = torch.randn(4, 3)
    target = torch.full((4,), -100)
    fn = lambda x, t: aten.nll_loss_forward(x, t, None, REDUCTIONS[reduction], -100)  # noqa: E731
    actual, _ = run_on_kernels(fn, x, target)
    assert_matches(actual, fn(x, target), reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(20000, 3), (3, 5, 70, 70)], ids=str)
def test_many_targets(shape, reduction):
    """Several threadgroups of the reduced forward's first pass."""
    _check(shape, reduction)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("shape", [(262_145, 3), (3, 2, 300, 300)], ids=str)
def test_every_groups_chunk_starts_inside_the_targets(shape, reduction):
    """Between 2**18 and 2**20 positions the first pass's 1024 chunks,
    rounded up, would cover more than every position (262145 in chunks of
    257; 270000 in chunks of 264): fewer groups, none past the end."""
    _check(shape, reduction)


@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("shape", [(1_100_003, 3), (2, 3, 601, 1000)], ids=str)
def test_positions_in_runs(shape, weighted):
    """Over 2**20 positions the reduced forward's threads take runs of 4
    positions (nll_loss.metal's add_runs), then single ones: every third
    target ignored, and a bad target in a run and one in the tail raise."""
    _check(shape, "sum", weighted=weighted)
    x, target = _inputs(shape)
    forward = lambda x, t: _forward_op(x)(x, t, None, 1, -100)  # noqa: E731
    for bad_position in (5, target.numel() - 1):
        bad = target.clone()
        bad.view(-1)[bad_position] = 3
        with pytest.raises(IndexError):
            run_on_kernels(forward, x, bad)


@pytest.mark.parametrize("classes", [1, 32, 33, 70], ids=lambda c: f"classes{c}")
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_spatial_backward_writes_every_element(classes, reduction):
    """nll_loss2d's backward writes each element of grad_input once, its
    threads taking 32 classes each (70: three chunks, the last of 6), into
    a grad_input= full of NaN (contiguous: the CPU refuses others), of which
    no element may keep its NaN."""
    x, target = _inputs((2, classes, 5, 7), ignore=0 if classes > 1 else -100)
    weight = torch.rand(classes)
    red = REDUCTIONS[reduction]
    _, total = aten.nll_loss2d_forward(x, target, weight, red, -100)
    grad = torch.randn(2, 5, 7) if reduction == "none" else torch.tensor(0.7)
    expected = aten.nll_loss2d_backward(grad, x, target, weight, red, -100, total)
    fn = lambda g, x, t, w, tw, gi: aten.nll_loss2d_backward.grad_input(  # noqa: E731
        g, x, t, w, red, -100, tw, grad_input=gi)
    written, dispatches = run_on_kernels(fn, grad, x, target, weight, total, torch.full(x.shape, float("nan")))
    assert_matches(written, expected, f"{classes} classes {reduction}")
    assert any(d.op == "nll_loss_backward_planes" for d in dispatches)


def test_uint8_targets():
    """nll_loss takes them; nll_loss2d refuses them (test_errors_are_the_cpus)."""
    _check((6, 5), "mean", target_dtype=torch.uint8, ignore=255)
    _check((6, 5), "none", target_dtype=torch.uint8, ignore=1)


@pytest.mark.parametrize("layout", ["transposed", "strided"])
@pytest.mark.parametrize("shape", [(6, 5), (2, 3, 4, 5)], ids=str)
def test_non_contiguous_operands(shape, layout):
    _check(shape, "none", layout=layout)
    _check(shape, "mean", layout=layout)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_reduced_precision(dtype, reduction):
    _check((300, 7), reduction, dtype=dtype)
    _check((2, 3, 8, 8), reduction, dtype=dtype)


def test_out_forms_write_into_non_contiguous_outs():
    x, target = _inputs((4, 5))
    weight = torch.rand(5)
    out, total = aten.nll_loss_forward(x, target, weight, 0, -100)
    fn = lambda x, t, w, o, tw: (aten.nll_loss_forward.output(x, t, w, 0, -100, output=o, total_weight=tw), o, tw)  # noqa: E731
    (returned, written, written_total), dispatches = run_on_kernels(fn, x, target, weight, torch.zeros(8)[::2],
                                                                    torch.zeros(()))
    assert_matches(written, out, "output=")
    assert_matches(written_total, total, "total_weight=")
    assert_matches(returned[0], out, "returned")
    grad = torch.randn(4)
    expected = aten.nll_loss_backward(grad, x, target, weight, 0, -100, total)
    fn = lambda g, x, t, w, tw, gi: (aten.nll_loss_backward.grad_input(g, x, t, w, 0, -100, tw, grad_input=gi), gi)  # noqa: E731
    (returned, written), _ = run_on_kernels(fn, grad, x, target, weight, total, torch.zeros(5, 4).t())
    assert_matches(written, expected, "grad_input=")
    assert dispatches


CALLS = {
    "target_too_large": lambda x, t, w: aten.nll_loss_forward(x, torch.tensor([0, 5, 1, 1]), w, 1, -100),
    "target_negative": lambda x, t, w: aten.nll_loss_forward(x, torch.tensor([0, -1, 1, 1]), w, 0, -100),
    "target_bad_backward": lambda x, t, w: aten.nll_loss_backward(torch.tensor(1.0), x, torch.tensor([0, 5, 1, 1]),
                                                                  w, 1, -100, torch.tensor(1.0)),
    "target_bad_2d_backward": lambda x, t, w: aten.nll_loss2d_backward(
        torch.tensor(1.0), x.reshape(1, 5, 2, 2), torch.tensor([[[0, 1], [-2, 3]]]), w, 1, -100, torch.tensor(1.0)),
    "target_bad_2d": lambda x, t, w: aten.nll_loss2d_forward(x.reshape(1, 5, 2, 2), torch.full((1, 2, 2), 9), w, 2,
                                                             -100),
    "target_int32": lambda x, t, w: aten.nll_loss_forward(x, t.int(), w, 1, -100),
    "2d_target_uint8": lambda x, t, w: aten.nll_loss2d_forward(x.reshape(1, 5, 2, 2), t.reshape(1, 2, 2).byte(), w,
                                                               1, -100),
    "integers": lambda x, t, w: aten.nll_loss_forward(x.long(), t, None, 1, -100),
    "weight_dtype": lambda x, t, w: aten.nll_loss_forward(x.half(), t, w, 1, -100),
    "target_size": lambda x, t, w: aten.nll_loss_forward(x, t[:3], w, 1, -100),
    "weight_size": lambda x, t, w: aten.nll_loss_forward(x, t, w[:3], 1, -100),
    "input_3d": lambda x, t, w: aten.nll_loss_forward(x.reshape(2, 2, 5), t, w, 1, -100),
    "target_2d": lambda x, t, w: aten.nll_loss_forward(x, t.reshape(2, 2), w, 1, -100),
    "grad_not_single": lambda x, t, w: aten.nll_loss_backward(torch.randn(4), x, t, w, 1, -100, torch.tensor(1.0)),
    "grad_size_none": lambda x, t, w: aten.nll_loss_backward(torch.randn(3), x, t, w, 0, -100, torch.tensor(1.0)),
    "total_weight_size": lambda x, t, w: aten.nll_loss_backward(torch.tensor(1.0), x, t, w, 1, -100,
                                                                torch.ones(2)),
    "2d_target_dims": lambda x, t, w: aten.nll_loss2d_forward(x.reshape(1, 5, 2, 2), t.reshape(2, 2), w, 1, -100),
    "2d_input_dims": lambda x, t, w: aten.nll_loss2d_forward(x.reshape(5, 2, 2), t.reshape(1, 2, 2), w, 1, -100),
    "2d_size": lambda x, t, w: aten.nll_loss2d_forward(x.reshape(1, 5, 2, 2), t.reshape(1, 4, 1), w, 1, -100),
    "2d_grad_input_strided": lambda x, t, w: aten.nll_loss2d_backward.grad_input(
        torch.tensor(1.0), x.reshape(1, 5, 2, 2), t.reshape(1, 2, 2), w, 1, -100, torch.tensor(1.0),
        grad_input=torch.empty(1, 2, 2, 5).permute(0, 3, 1, 2)),
    "2d_grad_dims": lambda x, t, w: aten.nll_loss2d_backward(torch.randn(2, 2), x.reshape(1, 5, 2, 2),
                                                             t.reshape(1, 2, 2), w, 0, -100, torch.tensor(1.0)),
}


@pytest.mark.parametrize("name", CALLS)
def test_errors_are_the_cpus(name):
    x, w = torch.randn(4, 5), torch.rand(5)
    t = torch.tensor([0, 4, 2, 1])
    with pytest.raises(Exception) as cpu_error:
        CALLS[name](x, t, w)
    with pytest.raises(Exception) as our_error:
        run_on_kernels(CALLS[name], x, t, w)
    assert type(our_error.value) is type(cpu_error.value), (our_error.value, cpu_error.value)


def test_a_raised_flag_does_not_reach_later_calls():
    """The bad-target flag lives in host-visible words that later calls take
    again (csrc/runtime/kernel_flag.h): each raising call, then a good call,
    over more calls than one block of words holds."""
    x, target = torch.randn(4, 5), torch.tensor([0, 4, 2, 1])
    bad = torch.tensor([0, 9, 2, 1])
    forward = lambda x, t: aten.nll_loss_forward(x, t, None, 1, -100)  # noqa: E731
    expected = forward(x, target)
    for call in range(300):
        with pytest.raises(IndexError):
            run_on_kernels(forward, x, bad)
        actual, _ = run_on_kernels(forward, x, target)
        assert_matches(actual, expected, f"good call after bad call {call}")


# Run in its own process so that the CUDA backend reads its wait switch
# afresh: a bad target, then a good one, each called while the GPU still
# sleeps through earlier work (torch.cuda._sleep, about 50 ms).
_BUSY_GPU_CALLS = """
import torch, mps_ops
from mps_ops.testing import emulate
mps_ops.enable_overrides()  # nll_loss_forward is an override op
x = torch.randn(64, 5).log_softmax(1)
target = torch.randint(0, 5, (64,))
expected = torch.ops.aten.nll_loss_forward(x, target, None, 1, -100)[0]
bad = target.clone(); bad[-1] = 9
x, target, bad = x.cuda(), target.cuda(), bad.cuda()
with mps_ops.profile() as prof, emulate():
    for call in range(3):
        torch.cuda.synchronize()
        torch.cuda._sleep(100_000_000)
        try:
            torch.ops.aten.nll_loss_forward(x, bad, None, 1, -100)
            raise SystemExit(f"call {call}: a bad target did not raise")
        except IndexError:
            pass
        torch.cuda._sleep(100_000_000)
        actual = torch.ops.aten.nll_loss_forward(x, target, None, 1, -100)[0]
        torch.testing.assert_close(actual.cpu(), expected)
assert len(prof.dispatches) >= 6 and all(d.kernel.startswith("nll_loss") for d in prof.dispatches), prof.dispatches
print("ok")
"""


@pytest.mark.skipif(mps_ops.backend != "cuda", reason="a GPU busy with earlier work: the CUDA backend's waits")
@pytest.mark.parametrize("wait", ["done_word", "stream_synchronize"])
def test_the_flag_is_read_after_the_gpu_finishes_earlier_work(wait):
    """KernelFlag::raised waits for everything queued before the call
    (Backend::wait_for_gpu: the CUDA backend's stream-written done word, or
    cuStreamSynchronize with MPS_OPS_CUDA_WAIT_BY_SYNC=1): a wait that
    returned early would read the flag before the kernel set it."""
    env = dict(os.environ, MPS_OPS_CUDA_WAIT_BY_SYNC="1" if wait == "stream_synchronize" else "0")
    result = subprocess.run([sys.executable, "-c", _BUSY_GPU_CALLS], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stdout + result.stderr
