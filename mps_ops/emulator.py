"""Switches of the CPU emulator (the backend on Linux; see docs/emulator.md).

    with mps_ops.emulator.checked():            # bounds-checked buffers
        ...
    with mps_ops.emulator.reverse_group_order():  # threadgroups last to first
        ...

MPS_OPS_CHECKED=1 turns checked mode on for the whole process.
"""

from __future__ import annotations

import contextlib
import threading

from . import _C, backend


def _require_emulator(what: str) -> None:
    if backend != "emulator":
        raise RuntimeError(f"mps_ops.emulator.{what}() needs the emulator backend (this is {backend})")


# Per switch: the baseline value (before any `with`) and the requests of the
# `with` blocks still open, in the order they opened, from any thread. The
# switch takes the newest open request's value, or the baseline when none is
# open: two threads that overlap never leave it on afterwards, whatever order
# they leave in.
_lock = threading.Lock()
_open: dict = {}


@contextlib.contextmanager
def _switch(name: str, setter, enabled: bool):
    _require_emulator(name)
    request = object()
    with _lock:
        if name in _open:
            setter(enabled)
        else:
            _open[name] = (setter(enabled), [])  # the setter returns the value it replaces
        _open[name][1].append((request, enabled))
    try:
        yield
    finally:
        with _lock:
            baseline, requests = _open[name]
            requests[:] = [r for r in requests if r[0] is not request]
            setter(requests[-1][1] if requests else baseline)
            if not requests:
                del _open[name]


def checked(enabled: bool = True):
    """Out-of-bounds buffer accesses raise IndexError naming the kernel, the
    buffer index and the byte offset, instead of corrupting memory."""
    return _switch("checked", _C.set_checked, enabled)


def reverse_group_order(enabled: bool = True):
    """Run threadgroups from last to first, to expose kernels that assume an order."""
    return _switch("reverse_group_order", _C.set_reverse_group_order, enabled)


def dry_run(enabled: bool = True):
    """Host path only: kernels are looked up and bound, not run (outputs stay
    unwritten). For measuring host overhead (benchmarks/bench_host.py)."""
    return _switch("dry_run", _C.set_dry_run, enabled)


def pipeline_thread_limit(limit: int):
    """Pipelines report at most `limit` threads per threadgroup (32 to 1024),
    as an Apple GPU pipeline whose registers allow fewer than 1024 does (its
    maxTotalThreadsPerThreadgroup need not be a power of two): the host's
    mappings must fit whatever the pipeline allows."""
    if not 32 <= limit <= 1024:
        raise ValueError(f"mps_ops.emulator.pipeline_thread_limit: {limit} is outside 32..1024")
    return _switch("pipeline_thread_limit", _C.set_pipeline_thread_limit, limit)
