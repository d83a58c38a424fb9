"""mps_ops.profile(): every kernel dispatch made inside the block."""

from __future__ import annotations

from dataclasses import dataclass

from . import _C


@dataclass(frozen=True)
class Dispatch:
    kernel: str  # host name, e.g. "ndtri_dense_float_float"
    threads: tuple  # grid size (x, y, z), dispatchThreads semantics
    group_size: tuple  # threads per threadgroup (x, y, z)
    buffers: tuple  # bytes bound, one int per argument slot


class Profile:
    """Context manager; ``.dispatches`` is filled when the block exits."""

    def __init__(self):
        self.dispatches: list = []

    def __enter__(self):
        _C.profile_start()
        return self

    def __exit__(self, *exc):
        self.dispatches = [
            Dispatch(kernel, tuple(threads), tuple(group), tuple(buffers))
            for kernel, threads, group, buffers in _C.profile_stop()
        ]
        return False

    def kernels(self) -> list:
        return [d.kernel for d in self.dispatches]


def profile() -> Profile:
    return Profile()
