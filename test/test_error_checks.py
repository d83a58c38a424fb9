"""mps_ops.set_error_checks: ops whose kernels find bad input (a KernelFlag)
raise at the call by default; "deferred", they return at once and the same
error comes later (csrc/runtime/error_checks.h). The emulator sets a mark
only at a wait, as Metal completes a command buffer only once it is
committed, so the checks wait here where they would on a Mac; on CUDA the
GPU sets marks as it goes, and a later call may run a check sooner."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading

import pytest
import torch

import mps_ops
from helpers import assert_matches, run_on_kernels
from mps_ops.samples import cpu_dtype
from mps_ops.testing import device, emulate
from sweep import assert_same_outcome, run
from test_index_checks import CASES, _cases

# The overloads whose stubs read a KernelFlag back.
FLAGGED = re.compile(r"nll_loss|multi_margin_loss|take|put_|max_pool2d_with_indices_backward"
                     r"|adaptive_max_pool3d_backward|linalg_ldl_solve|binary_cross_entropy")
LATE = "deferred error check"
# Marks set only by a wait (the emulator, as Metal): counts are exact.
MARKS_AT_WAITS = mps_ops.backend == "emulator"


@pytest.fixture
def deferred():
    mps_ops.set_error_checks("deferred")
    try:
        yield
    finally:
        # Runs what the test left: an error there fails the test.
        mps_ops.set_error_checks("at_call")


def _deferred_outcome(op, args):
    """The call with checks deferred, and what check_errors raised after it."""
    mps_ops.set_error_checks("deferred")
    try:
        outcome = run(op, args, ours=True)
        try:
            mps_ops.check_errors()
        except Exception as error:  # noqa: BLE001 - compared below
            return outcome, error
        return outcome, None
    finally:
        mps_ops.set_error_checks("at_call")


@pytest.mark.parametrize("sample, record", [c for c in CASES if FLAGGED.match(c.id)])
def test_a_deferred_check_raises_what_the_call_raises(sample, record):
    """Every index sweep case of a flagged op: where the call raised at the
    call, deferred it returns (unless the host's own checks raise first)
    and check_errors raises the same exception, naming the op; where the
    call succeeded, deferred it gives the same results and raises nothing."""
    dtype = cpu_dtype(sample, record)
    failures, late_errors = [], 0
    for (_, label, at_call_args), (_, _, deferred_args) in zip(_cases(sample, dtype), _cases(sample, dtype)):
        where = f"{sample.overload} {label}"
        at_call = run(sample.op, at_call_args, ours=True)
        outcome, late = _deferred_outcome(sample.op, deferred_args)
        if at_call.error is None or outcome.error is not None:
            if late is not None:
                failures.append(f"{where}: check_errors raised {late!r} after a call that raised or returned")
                continue
            try:
                assert_same_outcome(at_call, outcome, where)
            except AssertionError as failure:
                failures.append(str(failure))
            continue
        late_errors += 1
        if type(late) is not type(at_call.error) or str(at_call.error) not in str(late) or LATE not in str(late):
            failures.append(f"{where}: at the call {at_call.error!r}; deferred {late!r}")
    assert not failures, "\n".join(failures)
    # Not vacuous: the sweep's bad values reach the kernels' flags.
    assert late_errors > 0, f"{sample.overload}: no error came from a deferred check"


def _nll(targets):
    """nll_loss on our kernels (its operands moved to the test device)."""
    x = torch.randn(4, 5)
    return lambda: run_on_kernels(torch.nn.functional.nll_loss, x, torch.tensor(targets))


def _bad_nll():
    return _nll([0, 1, 7, 2])


def _good_nll():
    return _nll([0, 1, 4, 2])


def test_at_call_is_the_default_and_raises_at_the_call():
    assert mps_ops.error_checks() == "at_call"
    with pytest.raises(IndexError, match="Target out of bounds"):
        _bad_nll()()
    assert mps_ops.pending_error_checks() == 0


def test_a_deferred_call_returns_and_check_errors_raises_once(deferred):
    _, dispatches = _bad_nll()()
    assert dispatches, "nll_loss did not reach our kernels"
    assert mps_ops.pending_error_checks() == 1
    with pytest.raises(IndexError, match="Target out of bounds") as late:
        mps_ops.check_errors()
    assert "nll_loss" in str(late.value) and LATE in str(late.value)
    assert mps_ops.pending_error_checks() == 0
    mps_ops.check_errors()  # raised once, then gone


def test_good_calls_leave_nothing_to_raise(deferred):
    good = _good_nll()
    expected, _ = good()
    for _ in range(5):
        result, _ = good()
    assert mps_ops.pending_error_checks() == 6 if MARKS_AT_WAITS else mps_ops.pending_error_checks() <= 6
    mps_ops.check_errors()
    assert mps_ops.pending_error_checks() == 0
    assert_matches(result, expected)


def test_waiting_checks_are_bounded_and_a_later_call_raises(deferred):
    """The call that finds max_pending_error_checks waiting waits for them
    all, and raises the earliest error among them."""
    limit = mps_ops._error_checks.max_pending_error_checks
    _bad_nll()()
    good = _good_nll()
    raised_at = None
    for call in range(1, limit + 1):
        try:
            good()
        except IndexError as error:
            assert LATE in str(error)
            raised_at = call
            break
        assert mps_ops.pending_error_checks() <= limit
    assert raised_at == limit if MARKS_AT_WAITS else raised_at is not None
    assert mps_ops.pending_error_checks() <= 1  # at most the raising call's own


def test_switching_back_to_at_call_runs_what_waits():
    mps_ops.set_error_checks("deferred")
    try:
        _bad_nll()()
    finally:
        with pytest.raises(IndexError, match=LATE):
            mps_ops.set_error_checks("at_call")
    assert mps_ops.error_checks() == "at_call"
    assert mps_ops.pending_error_checks() == 0
    with pytest.raises(IndexError, match="Target out of bounds"):
        _bad_nll()()


@pytest.mark.parametrize("bad", ["input", "target"])
def test_binary_cross_entropy_defers_its_range_checks(deferred, bad):
    """Not in the index sweep: its flag is for values outside [0, 1]."""
    x, y = torch.tensor([0.25, 0.5]), torch.tensor([0.0, 1.0])
    if bad == "input":
        x = torch.tensor([0.25, 1.5])
    else:
        y = torch.tensor([0.0, -1.0])
    run_on_kernels(torch.nn.functional.binary_cross_entropy, x, y)
    assert mps_ops.pending_error_checks() == 1
    with pytest.raises(RuntimeError, match=f"all elements of {bad} should be between 0 and 1") as late:
        mps_ops.check_errors()
    assert "binary_cross_entropy" in str(late.value) and LATE in str(late.value)


def test_any_thread_raises_a_check_another_thread_made(deferred):
    """As autograd's device threads make a backward's checks, which the
    user's thread must see."""
    thread = threading.Thread(target=_bad_nll())
    thread.start()
    thread.join()
    with pytest.raises(IndexError, match=LATE):
        mps_ops.check_errors()
    assert mps_ops.pending_error_checks() == 0


def test_switching_back_from_another_thread_runs_what_waits():
    mps_ops.set_error_checks("deferred")
    try:
        _bad_nll()()
        failure = {}

        def switch_back():
            try:
                mps_ops.set_error_checks("at_call")
            except IndexError as error:
                failure["error"] = error

        thread = threading.Thread(target=switch_back)
        thread.start()
        thread.join()
        assert LATE in str(failure.get("error"))
    finally:
        mps_ops.set_error_checks("at_call")
    assert mps_ops.pending_error_checks() == 0


def test_a_backward_check_is_deferred_too(deferred):
    """cross_entropy's backward (nll_loss_backward) as in a training step."""
    logits = torch.randn(4, 5, requires_grad=True)
    target = torch.tensor([0, 1, 2, 9])

    def step(x, t):
        loss = torch.nn.functional.cross_entropy(x, t, reduction="sum")
        return torch.autograd.grad(loss, x)[0]

    errors = []
    try:
        # On a GPU the backward runs on autograd's device thread, and the
        # forward's check may run (and raise) at the backward's call.
        run_on_kernels(step, logits, target)
    except IndexError as error:
        errors.append(error)
    if MARKS_AT_WAITS:
        assert mps_ops.pending_error_checks() == 2  # the forward's and the backward's
    while mps_ops.pending_error_checks():
        try:
            mps_ops.check_errors()
        except IndexError as error:
            errors.append(error)
    assert errors and all(LATE in str(e) and "nll_loss" in str(e) for e in errors), errors


def test_a_raising_call_leaves_an_out_as_it_was():
    """At the call, adaptive_max_pool3d_backward raises before it copies into
    a non-contiguous out=."""
    with torch.device(device()):
        x, grad = torch.randn(1, 1, 2, 2, 2), torch.ones(1, 1, 1, 1, 1)
        indices = torch.full((1, 1, 1, 1, 1), 100, dtype=torch.long)
        out = torch.full((1, 1, 2, 2, 4), 7.0)[..., ::2]
    with emulate(), mps_ops.profile() as prof, pytest.raises(RuntimeError, match="every index must name"):
        torch.ops.aten.adaptive_max_pool3d_backward.grad_input(grad, x, indices, grad_input=out)
    assert prof.dispatches, "the call did not reach our kernel"
    assert bool((out == 7).all())


def test_a_bad_mode_is_refused():
    with pytest.raises(ValueError, match="at_call"):
        mps_ops.set_error_checks("later")
    assert mps_ops.error_checks() == "at_call"


def _python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


def test_the_environment_sets_the_mode_and_exit_reports_what_waits():
    code = ("import torch, mps_ops\n"
            "from mps_ops.testing import device, emulate\n"
            "mps_ops.enable_overrides(['nll_loss_forward'])\n"
            "print(mps_ops.error_checks())\n"
            "with torch.device(device()), emulate():\n"
            "    torch.nn.functional.nll_loss(torch.randn(2, 3), torch.tensor([0, 5]))\n"
            "print(mps_ops.pending_error_checks())\n")
    done = _python(code, MPS_OPS_ERROR_CHECKS="deferred")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["deferred", "1"]
    assert "a deferred error check found, at exit" in done.stderr and "Target out of bounds" in done.stderr
    refused = _python("import mps_ops; print(mps_ops.error_checks())", MPS_OPS_ERROR_CHECKS="sometimes")
    assert refused.returncode == 0, refused.stderr
    assert refused.stdout.split() == ["at_call"]
    assert "MPS_OPS_ERROR_CHECKS='sometimes'" in refused.stderr
