"""Switches of the CPU emulator (the backend on Linux; see docs/emulator.md).

    with mps_ops.emulator.checked():            # bounds-checked buffers
        ...
    with mps_ops.emulator.reverse_group_order():  # threadgroups last to first
        ...

MPS_OPS_CHECKED=1 turns checked mode on for the whole process.
"""

from __future__ import annotations

import contextlib

from . import _C, backend


def _require_emulator(what: str) -> None:
    if backend != "emulator":
        raise RuntimeError(f"mps_ops.emulator.{what}() needs the emulator backend (this is {backend})")


@contextlib.contextmanager
def _switch(name: str, setter, enabled: bool):
    _require_emulator(name)
    previous = setter(enabled)
    try:
        yield
    finally:
        setter(previous)


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
