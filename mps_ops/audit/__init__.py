"""mps_ops.audit: which aten ops a model would dispatch on a Mac, and what the
MPS backend of a torch release (2.9 to 2.15) does with each, before you run it
on a Mac.

    import torch, mps_ops
    report = mps_ops.audit(model, example_input, backward=True, torch_version="2.13")
    print(report)              # a table and a one-line verdict
    report.markdown(); report.json()

    python -m mps_ops.audit    # the built-in examples

The callable runs with MPS device semantics on fake tensors (no data, no
kernel runs) on any machine; on a Mac it may run on real "mps" tensors
(``on_device=True``). docs/audit.md says what each answer means and where it
comes from.
"""

from __future__ import annotations

import sys
import types

import torch

from .._registry import ops as _ops
from . import coverage
from .report import OpUse, Report, build
from .trace import AuditError, trace_on_fake_mps, trace_on_real_mps

__all__ = ["audit", "Report", "OpUse", "AuditError"]


def audit(fn, *example_inputs, backward: bool = False, torch_version: str | None = None,
          on_device: bool = False, **example_kwargs) -> Report:
    """Trace ``fn(*example_inputs, **example_kwargs)`` (a module or any
    callable) with MPS semantics and say, op by op, what a Mac with
    ``torch_version`` (default: the running torch's release) and mps_ops runs.

    backward: also record the backward of every output that requires grad
    (a gradient of ones). on_device: trace on real "mps" tensors (a Mac with
    a working MPS device only). The module is left as it was: its parameters
    and buffers are replaced by fakes for the call only.
    """
    release = coverage.release_of(torch_version)
    running = coverage.running_release()
    if on_device:
        if not torch.backends.mps.is_available():
            raise AuditError("on_device=True needs a working MPS device; leave it False to trace on fake tensors")
        trace = trace_on_real_mps(fn, example_inputs, example_kwargs, backward)
    else:
        trace = trace_on_fake_mps(fn, example_inputs, example_kwargs, backward,
                                  coverage.mps_kernel_over_composite(running or release))
    return build(trace, release, running, _ops(), torch.__version__, backward)


class _CallableModule(types.ModuleType):
    """``mps_ops.audit(model, x)`` calls audit(); the package stays a package
    (``python -m mps_ops.audit``, ``mps_ops.audit.Report``)."""

    def __call__(self, fn, *example_inputs, **kwargs) -> Report:
        return audit(fn, *example_inputs, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
