"""When ops whose kernels find bad input report it (csrc/runtime/error_checks.h).

Some ops learn of bad input only inside their kernels: nll_loss and
cross_entropy (a class index out of range), multi_margin_loss,
binary_cross_entropy (a value outside [0, 1]), take and put_ (an index out of
range), the max-pool backwards (an index outside its window), ldl_solve.

``"at_call"`` (the default): such an op waits for the GPU once, after its
kernels, and raises before it returns, as the CPU does.

``"deferred"``: it returns at once. The error, if any, is raised once the GPU
has run the op's kernels: by a later such op (on any thread: autograd runs
a backward on its own) that finds them run, by :func:`check_errors`, or when
more than 64 checks wait (one wait for them all); checks run in call order.
It is the exception the call would have raised, naming the op; until then
that call's results must not be used. On a Mac this saves a command-buffer commit and
wait per call (cross_entropy's forward and backward: two per training step).
PyTorch's own Metal indexing kernels report their errors at the next sync the
same way.

Set at import by ``MPS_OPS_ERROR_CHECKS=deferred``.
"""

import atexit
import os
import warnings

from . import _C

max_pending_error_checks: int = _C.max_pending_error_checks


def set_error_checks(mode: str) -> None:
    """"at_call" or "deferred" for every thread. Back to "at_call", the
    waiting checks run first (and may raise)."""
    _C.set_error_checks(mode)


def error_checks() -> str:
    """The mode set: "at_call" or "deferred"."""
    return _C.error_checks()


def check_errors() -> None:
    """Waits for the GPU to run the deferred checks' kernels, then raises
    the first error they found (the others are dropped)."""
    _C.check_errors()


def pending_error_checks() -> int:
    """How many deferred checks have not run yet."""
    return _C.pending_error_checks()


@atexit.register
def _report_at_exit() -> None:
    # A process ending with checks unrun would drop their errors silently.
    if pending_error_checks() == 0:
        return
    try:
        check_errors()
    except Exception as e:  # noqa: BLE001  (reported, not raised, at exit)
        warnings.warn(f"mps_ops: a deferred error check found, at exit: {e}", stacklevel=1)


def _set_from_environment(value: str) -> None:
    if not value:
        return
    try:
        set_error_checks(value)
    except ValueError as e:
        warnings.warn(f"MPS_OPS_ERROR_CHECKS={value!r}: {e}; errors are checked at the call", stacklevel=2)


_set_from_environment(os.environ.get("MPS_OPS_ERROR_CHECKS", ""))
