"""_ctc_loss and _ctc_loss_backward (fill ops: torch 2.9 to 2.13 lack both
on MPS, so nn.CTCLoss raised) against the CPU: padded (2-D) and
concatenated (1-D) targets, int64 and int32, repeated labels (the skip
rule), a blank other than 0, empty targets and inputs, losses no path
reaches (infinite: zero_infinity), recursions wider than a threadgroup and
gradient rows of more classes than one, non-contiguous operands, the .Tensor
forms, the CPU's errors and what it leaves unchecked, F.ctc_loss's
gradients through autograd (its OpInfo) and log_probs past 2**31 elements
(on a GPU)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.testing._internal.common_methods_invocations import op_db

import mps_ops
from helpers import (assert_gradients_near, assert_matches, device, emulate, errors_of_cpu_and_ours,
                     opinfo_gradients, run_on_kernels, run_routed)
from mps_ops.samples.ctc_loss import reached as log_alpha_reached
from mps_ops.testing import native_route

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_ctc_loss", "_ctc_loss_backward"}

forward = torch.ops.aten._ctc_loss
backward = torch.ops.aten._ctc_loss_backward
NEG_INF = float("-inf")


def run_as_on_a_mac(fn, *args):
    """fn with our stubs reached by C++ dispatch alone, as on a Mac. Under a
    Python dispatch mode (emulate()) torch's ctc_loss composite takes its
    path for tensor subclasses, which divides the loss by the target
    lengths where they are (CPU tensors here): devices mixed, on any
    device."""
    return run_routed(native_route, fn, *args)

FORWARD_KERNELS = ["ctc_loss_states", "ctc_loss_alpha"]
BACKWARD_KERNELS = ["ctc_loss_states", "ctc_loss_beta", "ctc_loss_gradient"]


def _problem(time=12, batch=3, classes=6, target_length=4, input_lengths=None, target_lengths=None,
             concatenated=False, target_dtype=torch.long, blank=0, seed=0):
    """(log_probs, targets, input_lengths, target_lengths, blank): random
    log-softmaxed inputs and labels other than the blank."""
    generator = torch.Generator().manual_seed(seed)
    log_probs = torch.randn(time, batch, classes, generator=generator).log_softmax(2)
    input_lengths = input_lengths or [time - (b % 3) for b in range(batch)]
    target_lengths = target_lengths or [max(0, target_length - (b % 2)) for b in range(batch)]
    labels = torch.randint(1, classes, (batch, max([target_length, *target_lengths])), generator=generator)
    labels = (labels + blank) % classes  # never the blank
    if concatenated:
        targets = torch.cat([labels[b, :n] for b, n in enumerate(target_lengths)])
    else:
        targets = labels
    return log_probs, targets.to(target_dtype), list(input_lengths), list(target_lengths), blank


def _check_forward(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity=False, where=""):
    call = lambda lp, tg: forward(lp, tg, input_lengths, target_lengths, blank, zero_infinity)  # noqa: E731
    cpu_targets = targets.contiguous()  # the CPU misreads strided 1-D targets (test_strided_concatenated_targets)
    expected = call(log_probs, cpu_targets)
    actual, dispatches = run_on_kernels(call, log_probs, targets)
    assert [d.op for d in dispatches] == (FORWARD_KERNELS if log_probs.size(1) else []), where
    assert_matches(actual[0], expected[0], f"{where} loss")
    assert actual[1].shape == expected[1].shape and actual[1].is_contiguous(), where
    reached = log_alpha_reached(expected[1], input_lengths, target_lengths)
    assert_matches(actual[1][reached], expected[1][reached], f"{where} log_alpha")
    assert bool((actual[1][~reached] == NEG_INF).all()), f"{where}: log_alpha past the recursion"
    return expected


def _check_backward(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity=False, where="",
                    grad=None):
    grad = torch.randn(log_probs.size(1)) if grad is None else grad

    def call(g, lp, tg, nll, log_alpha):
        return backward(g, lp, tg, input_lengths, target_lengths, nll, log_alpha, blank, zero_infinity)

    def with_forward(g, lp, tg):
        return [g, lp, tg, *forward(lp, tg.contiguous(), input_lengths, target_lengths, blank, zero_infinity)]

    cpu_targets = targets.contiguous()  # the CPU misreads strided 1-D targets (test_strided_concatenated_targets)
    expected = call(*with_forward(grad, log_probs, cpu_targets))
    actual, dispatches = run_on_kernels(call, *with_forward(grad, log_probs, targets))
    assert [d.op for d in dispatches] == (BACKWARD_KERNELS if log_probs.numel() else []), where
    assert actual.shape == expected.shape and actual.is_contiguous(), where
    truth = call(*with_forward(grad.double(), log_probs.double(), cpu_targets))
    assert_gradients_near([actual], [expected], [truth], torch.float32, where)
    return actual


CASES = {
    "padded": {},
    "concatenated": dict(concatenated=True),
    "int32 targets": dict(target_dtype=torch.int32),
    "int32 concatenated": dict(target_dtype=torch.int32, concatenated=True),
    "blank 3": dict(blank=3),
    "last class blank": dict(blank=5),
    "empty targets": dict(target_lengths=[0, 2, 0]),
    "empty inputs": dict(input_lengths=[0, 12, 0], target_lengths=[0, 3, 2]),
    "input shorter than its target": dict(input_lengths=[3, 12, 2], target_length=5),
    "one time step": dict(time=1, input_lengths=[1, 1, 0], target_lengths=[1, 0, 1]),
    "one class short of the labels": dict(classes=2),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("zero_infinity", [False, True], ids=["", "zero_infinity"])
def test_against_cpu(case, zero_infinity):
    problem = _problem(**case)
    _check_forward(*problem, zero_infinity=zero_infinity, where=str(case))
    _check_backward(*problem, zero_infinity=zero_infinity, where=str(case))


def test_repeated_labels_take_no_skip():
    """A label repeated back to back must pass through a blank between the
    two (the skip rule): targets of one label only, and alternating ones."""
    log_probs = torch.randn(9, 2, 4).log_softmax(2)
    targets = torch.tensor([[2, 2, 2, 2], [1, 3, 1, 3]])
    for lengths in ([9, 9], [7, 8]):
        _check_forward(log_probs, targets, lengths, [4, 4], 0, where=f"inputs {lengths}")
        _check_backward(log_probs, targets, lengths, [4, 4], 0, where=f"inputs {lengths}")


def test_target_naming_the_blank():
    """A target element equal to the blank (nothing forbids it): the last
    time step's two final states both land on the blank's gradient."""
    log_probs = torch.randn(6, 2, 4).log_softmax(2)
    targets = torch.tensor([[1, 0, 2], [0, 0, 3]])
    _check_forward(log_probs, targets, [6, 6], [3, 2], 0)
    _check_backward(log_probs, targets, [6, 6], [3, 2], 0)


@pytest.mark.parametrize("zero_infinity", [False, True], ids=["nan gradient", "zero_infinity"])
def test_impossible_alignments(zero_infinity):
    """A target longer than its input allows has no path: loss +inf; its
    gradient is NaN as the CPU's (inf - inf), or zero with zero_infinity.
    The other entries' are unchanged."""
    problem = _problem(time=4, input_lengths=[4, 2, 4], target_lengths=[2, 3, 1])
    expected = _check_forward(*problem, zero_infinity=zero_infinity)
    assert expected[0][1] == float("inf")
    grad = _check_backward(*problem, zero_infinity=zero_infinity)
    assert bool(grad[:2, 1].isnan().all()) != zero_infinity  # its input has 2 time steps
    assert bool((grad[2:, 1] == 0).all()) and bool(grad[:, 0].isfinite().all())


@pytest.mark.parametrize("target_length", [200, 600], ids=["401 states", "1201 states"])
def test_wider_than_a_threadgroup(target_length):
    """Targets of 200 elements (401 states) and of 600 (1,201): more states
    than a group's threads (1,024 at most; the emulator's pipelines take
    256), so threads hold several; and 300 classes (gradient rows of two
    classes per thread)."""
    time = target_length + 100
    problem = _problem(time=time, batch=2, classes=300, target_length=target_length,
                       input_lengths=[time, time - 10], target_lengths=[target_length, target_length * 3 // 4])
    _check_forward(*problem)
    _check_backward(*problem)


def test_non_contiguous_operands():
    """log_probs transposed from (batch, time, classes) and sliced, padded
    targets transposed, and a strided gradient."""
    log_probs = torch.randn(3, 12, 14).log_softmax(2).transpose(0, 1)[:, :, ::2]
    targets = torch.randint(1, 7, (5, 3)).t()
    grad = torch.randn(6)[::2]
    _check_forward(log_probs, targets, [12, 11, 9], [5, 4, 3], 0)
    _check_backward(log_probs, targets, [12, 11, 9], [5, 4, 3], 0, grad=grad)


def test_strided_concatenated_targets():
    """A strided 1-D targets tensor: ours reads its elements; the CPU reads
    entry b's target from (its offset) elements x stride, past entry 0 the
    wrong labels, so ours matches the CPU's call on a contiguous copy. (The
    elements between are valid labels: the CPU's backward writes out of
    bounds, corrupting the heap, where it misreads a label past the
    classes.)"""
    log_probs, targets, inputs, lengths, blank = _problem(concatenated=True)
    strided = torch.stack([targets, 6 - targets], 1).reshape(-1)[::2]
    assert strided.stride() == (2,) and torch.equal(strided, targets)
    _check_forward(log_probs, strided, inputs, lengths, blank)
    _check_backward(log_probs, strided, inputs, lengths, blank)
    misread = forward(log_probs, strided, inputs, lengths, blank, False)[0]
    assert not torch.equal(misread, forward(log_probs, targets, inputs, lengths, blank, False)[0])


@pytest.mark.parametrize("shape", [(12, 0, 6), (0, 3, 6)], ids=["no batch", "no time"])
def test_empty(shape):
    """The forward raises for an empty log_probs, as the CPU's; the
    backward (unchecked there) gives an empty gradient, no kernel."""
    log_probs = torch.randn(shape).log_softmax(2)
    batch = shape[1]
    targets = torch.randint(1, 6, (batch, 2))
    lengths = [0, 2, 1][:batch]
    call = lambda lp, tg: forward(lp, tg, [0] * batch, lengths, 0, False)  # noqa: E731
    cpu, ours = errors_of_cpu_and_ours(call, log_probs, targets)
    assert str(cpu) == str(ours) == "log_probs tensor must not be empty"
    args = [torch.ones(batch), log_probs, targets, torch.zeros(batch), torch.zeros(batch, shape[0], 5)]
    call = lambda g, lp, tg, n, a: backward(g, lp, tg, [0] * batch, lengths, n, a, 0, False)  # noqa: E731
    actual, dispatches = run_on_kernels(call, *args)
    assert not dispatches
    assert_matches(actual, call(*args))


def test_empty_inputs_lose_nothing_or_everything():
    """Input length 0: the loss is 0 (-0, as the CPU's) for an empty target
    and +inf otherwise."""
    problem = _problem(input_lengths=[0, 0, 5], target_lengths=[0, 2, 1])
    expected = _check_forward(*problem)
    assert str(expected[0][:2].tolist()) == "[-0.0, inf]"
    _check_backward(*problem)


def test_tensor_forms():
    """The .Tensor overloads take the lengths as tensors (int32 here), read
    on the host."""
    log_probs, targets, inputs, lengths, blank = _problem()
    lengths_as = lambda values: torch.tensor(values, dtype=torch.int32)  # noqa: E731
    call = lambda lp, tg: torch.ops.aten._ctc_loss.Tensor(lp, tg, lengths_as(inputs), lengths_as(lengths),  # noqa
                                                          blank, False)
    expected = call(log_probs, targets)
    actual, dispatches = run_on_kernels(call, log_probs, targets)
    assert [d.op for d in dispatches] == FORWARD_KERNELS
    assert_matches(actual[0], expected[0], "loss")
    args = [torch.randn(3), log_probs, targets, *expected]
    call = lambda g, lp, tg, n, a: torch.ops.aten._ctc_loss_backward.Tensor(  # noqa: E731
        g, lp, tg, lengths_as(inputs), lengths_as(lengths), n, a, blank, False)
    actual, dispatches = run_on_kernels(call, *args)
    assert [d.op for d in dispatches] == BACKWARD_KERNELS
    assert_matches(actual, call(*args), "gradient")


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("lengths_as", ["lists", "tensors"])
def test_ctc_loss_trains(reduction, lengths_as):
    """F.ctc_loss and its gradient through autograd, batched and unbatched."""
    log_probs, targets, inputs, lengths, blank = _problem(concatenated=True)
    if lengths_as == "tensors":
        inputs, lengths = torch.tensor(inputs), torch.tensor(lengths)

    def loss_and_gradient(lp, tg):
        lp = lp.detach().requires_grad_()
        loss = F.ctc_loss(lp, tg, inputs, lengths, blank=blank, reduction=reduction, zero_infinity=True)
        (loss.sum() if reduction == "none" else loss).backward()
        return loss.detach(), lp.grad

    expected = loss_and_gradient(log_probs, targets)
    actual, dispatches = run_as_on_a_mac(loss_and_gradient, log_probs, targets)
    assert set(FORWARD_KERNELS + BACKWARD_KERNELS) <= {d.op for d in dispatches}
    assert_matches(actual, expected, reduction)
    # Unbatched: (time, classes) log_probs, a 1-D target.
    unbatched = lambda lp, tg: F.ctc_loss(lp, tg, [12], [4], reduction=reduction)  # noqa: E731
    actual, _ = run_as_on_a_mac(unbatched, log_probs[:, 0], targets[:4])
    assert_matches(actual, unbatched(log_probs[:, 0], targets[:4]), "unbatched")


OPINFO = next(o for o in op_db if o.name == "nn.functional.ctc_loss")


@pytest.mark.parametrize("index", range(len(list(OPINFO.sample_inputs("cpu", torch.float32, requires_grad=True)))))
def test_opinfo_gradients(index):
    """ctc_loss's OpInfo samples: loss and gradient against the CPU's."""
    sample = list(OPINFO.sample_inputs("cpu", torch.float32, requires_grad=True))[index]
    inputs, gradients = opinfo_gradients(OPINFO, sample, index, torch.float32)
    expected = gradients(*inputs)
    actual, dispatches = run_as_on_a_mac(gradients, *inputs)
    assert "ctc_loss_gradient" in {d.op for d in dispatches}
    truth = gradients(*[t.double() for t in inputs])
    assert_gradients_near(actual, expected, truth, torch.float32, f"sample {index}")


def test_target_out_of_range_raises():
    """A target outside [0, classes) raises RuntimeError (forward and
    backward); the CPU reads past log_probs there (and its backward writes
    past its gradient)."""
    log_probs, targets, inputs, lengths, blank = _problem()
    nll, log_alpha = forward(log_probs, targets, inputs, lengths, blank, False)
    for bad in (6, -1):
        wrong = targets.clone()
        wrong[1, 1] = bad
        with pytest.raises(RuntimeError, match=r"_ctc_loss: a target is outside \[0, 6\)"):
            run_on_kernels(lambda lp, tg: forward(lp, tg, inputs, lengths, blank, False), log_probs, wrong)
        with pytest.raises(RuntimeError, match=r"_ctc_loss_backward: a target is outside \[0, 6\)"):
            run_on_kernels(lambda g, lp, tg, n, a: backward(g, lp, tg, inputs, lengths, n, a, blank, False),
                           torch.ones(3), log_probs, wrong, nll, log_alpha)
    # Past the target's length, a padded row's values are never read.
    padding = targets.clone()
    padding[1, 3:] = 99  # entry 1's target has 3 elements
    _check_forward(log_probs, padding, inputs, lengths, blank)


LP, TG, IL, TL, _ = _problem()
CPU_ERRORS = {
    "2-D log_probs": lambda lp, tg: forward(lp[:, 0], tg, IL, TL, 0, False),
    "3-D targets": lambda lp, tg: forward(lp, tg[None], IL, TL, 0, False),
    "uint8 targets": lambda lp, tg: forward(lp, tg.to(torch.uint8), IL, TL, 0, False),
    "half log_probs": lambda lp, tg: forward(lp.half(), tg, IL, TL, 0, False),
    "blank past the classes": lambda lp, tg: forward(lp, tg, IL, TL, 6, False),
    "negative blank": lambda lp, tg: forward(lp, tg, IL, TL, -1, False),
    "input lengths of another size": lambda lp, tg: forward(lp, tg, IL[:2], TL, 0, False),
    "target lengths of another size": lambda lp, tg: forward(lp, tg, IL, TL + [1], 0, False),
    "negative target length": lambda lp, tg: forward(lp, tg, IL, [4, -1, 2], 0, False),
    "target longer than its row": lambda lp, tg: forward(lp, tg, IL, [5, 3, 4], 0, False),
    "padded targets of another batch": lambda lp, tg: forward(lp, tg[:2], IL, TL, 0, False),
    "concatenated targets too short": lambda lp, tg: forward(lp, tg.reshape(-1)[:6], IL, TL, 0, False),
    "input length past the time steps": lambda lp, tg: forward(lp, tg, [12, 13, 10], TL, 0, False),
    "negative input length": lambda lp, tg: forward(lp, tg, [12, -1, 10], TL, 0, False),
    "float input lengths": lambda lp, tg: torch.ops.aten._ctc_loss.Tensor(lp, tg, torch.tensor([12., 11, 10]),
                                                                          torch.tensor(TL), 0, False),
    "backward of half log_probs": lambda lp, tg: backward(torch.ones(3).half(), lp.half(), tg, IL, TL,
                                                          torch.ones(3).half(), torch.zeros(3, 12, 9).half(), 0,
                                                          False),
}


@pytest.mark.parametrize("call", CPU_ERRORS.values(), ids=CPU_ERRORS.keys())
def test_cpu_errors(call):
    cpu, ours = errors_of_cpu_and_ours(call, LP, TG)
    assert str(cpu).split("(")[0].split(" for ")[0][:40] in str(ours) or isinstance(ours, NotImplementedError), \
        (cpu, ours)


UNCHECKED_BY_CPU = {
    "loss of another size": lambda g, lp, tg, n, a: backward(g, lp, tg, IL, TL, n[:2], a, 0, False),
    "gradient of another size": lambda g, lp, tg, n, a: backward(g[:2], lp, tg, IL, TL, n, a, 0, False),
    "log_alpha of fewer states": lambda g, lp, tg, n, a: backward(g, lp, tg, IL, TL, n, a[:, :, :5], 0, False),
    "log_alpha of fewer time steps": lambda g, lp, tg, n, a: backward(g, lp, tg, IL, TL, n, a[:, :5], 0, False),
    "log_alpha of another dtype": lambda g, lp, tg, n, a: backward(g, lp, tg, IL, TL, n, a.double(), 0, False),
}


def test_targets_past_the_kernels_state_count_raise():
    """A target length whose 2L + 1 states pass int32 (or whose sum with
    the others wraps int64, where the CPU's size check then passes):
    RuntimeError, forward and backward, before any kernel."""
    one = [torch.randn(1, 1, 2).log_softmax(2), torch.zeros(1, 1, dtype=torch.long).expand(1, 2**62)]
    four = [torch.randn(1, 4, 2).log_softmax(2), torch.zeros(1, dtype=torch.long)]
    calls = [
        (lambda lp, tg: forward(lp, tg, [1], [2**62], 0, False), one),
        (lambda lp, tg, g, n, a: backward(g, lp, tg, [1], [2**62], n, a, 0, False),
         one + [torch.ones(1), torch.ones(1), torch.zeros(1, 1, 1)]),
        (lambda lp, tg, g, n, a: backward(g, lp, tg, [1] * 4, [2**62] * 3 + [2**62 + 1], n, a, 0, False),
         four + [torch.ones(4), torch.ones(4), torch.zeros(4, 1, 1)]),
    ]
    for call, args in calls:
        with pytest.raises(RuntimeError, match="more than 1073741823"):
            run_on_kernels(call, *args)


@pytest.mark.parametrize("call", UNCHECKED_BY_CPU.values(), ids=UNCHECKED_BY_CPU.keys())
def test_backward_checks_the_forwards_outputs(call):
    """What the CPU's backward reads unchecked (past the end of smaller
    ones) raises RuntimeError."""
    nll, log_alpha = forward(LP, TG, IL, TL, 0, False)
    with pytest.raises(RuntimeError, match="_ctc_loss_backward"):
        run_on_kernels(call, torch.ones(3), LP, TG, nll, log_alpha)


@pytest.mark.skipif(mps_ops.backend == "emulator",
                    reason="log_probs of 2**31 + elements (8 GiB, and as much for the gradient): a GPU's memory")
def test_log_probs_past_2_to_the_31_elements():
    """65536 time steps x 32769 classes: the recursions depend only on the
    blank's and the target's classes, so the loss and their gradient
    columns must match the CPU's call on those columns alone; every other
    class's gradient is exp(log_prob) x grad."""
    time, classes = 65536, 32769
    torch.manual_seed(0)
    log_probs = torch.randn(time, 1, classes, device=device()) - 10.0
    labels = [classes - 1, 7, classes - 1]  # the last class: the highest offsets
    targets = torch.tensor([labels], device=device())
    grad = torch.tensor([0.75], device=device())
    with emulate():
        nll, log_alpha = forward(log_probs, targets, [time], [3], 0, False)
        gradient = backward(grad, log_probs, targets, [time], [3], nll, log_alpha, 0, False)
    columns = [0, 7, classes - 1]
    reduced = log_probs[:, :, columns].cpu()
    reduced_targets = torch.tensor([[2, 1, 2]])
    expected_nll, expected_alpha = forward(reduced, reduced_targets, [time], [3], 0, False)
    expected = backward(grad.cpu(), reduced, reduced_targets, [time], [3], expected_nll, expected_alpha, 0, False)
    torch.testing.assert_close(nll.cpu(), expected_nll, rtol=1e-5, atol=0)
    torch.testing.assert_close(gradient[:, :, columns].cpu(), expected, rtol=1e-4, atol=1e-6)
    others = torch.ones(classes, dtype=torch.bool, device=device())
    others[columns] = False
    for rows in (slice(0, 4), slice(time - 4, time)):
        torch.testing.assert_close(gradient[rows, :, others], log_probs[rows, :, others].exp() * 0.75,
                                   rtol=2e-6, atol=0)
