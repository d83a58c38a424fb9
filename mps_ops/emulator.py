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
def checked(enabled: bool = True):
    """Out-of-bounds buffer accesses raise IndexError naming the kernel, the
    buffer index and the byte offset, instead of corrupting memory."""
    _require_emulator("checked")
    previous = _C.set_checked(enabled)
    try:
        yield
    finally:
        _C.set_checked(previous)


@contextlib.contextmanager
def reverse_group_order(enabled: bool = True):
    """Run threadgroups from last to first, to expose kernels that assume an order."""
    _require_emulator("reverse_group_order")
    previous = _C.set_reverse_group_order(enabled)
    try:
        yield
    finally:
        _C.set_reverse_group_order(previous)


@contextlib.contextmanager
def dry_run(enabled: bool = True):
    """Host path only: kernels are looked up and bound, not run (outputs stay
    unwritten). For measuring host overhead (benchmarks/bench_host.py)."""
    _require_emulator("dry_run")
    previous = _C.set_dry_run(enabled)
    try:
        yield
    finally:
        _C.set_dry_run(previous)
