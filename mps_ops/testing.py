"""Helpers for testing mps_ops kernels against torch on the CPU.

On the emulator backend, ``emulate()`` is a TorchDispatchMode that sends every
active registry overload to its host stub (registered for the MPS dispatch
key) while the tensors stay on the CPU; everything else runs as usual. On the
CUDA backend (an NVIDIA GPU standing in for an Apple one) the same mode sends
them there with the tensors on the GPU (``device()`` is "cuda"). On a Mac
with the Metal backend the same tests run on real ``mps`` tensors and
``emulate()`` changes nothing.
"""

from __future__ import annotations

import contextlib
import os

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import _C, _registry, backend

_MPS_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.MPS)


def overload_name(func) -> str:
    """aten.special_ndtri.out -> "special_ndtri.out" (the registry's spelling)."""
    base = func._schema.name.split("::", 1)[1]
    return base if func._overloadname == "default" else f"{base}.{func._overloadname}"


def _family(name: str) -> str:
    """aten::frexp.Tensor_out -> "frexp"; put_ and put, _aminmax and aminmax share
    one, and so do an op and its generated functional form
    (_fused_moving_avg_obs_fq_helper_functional)."""
    base = name.split("::", 1)[-1].split(".", 1)[0].strip("_")
    return base[: -len("_functional")] if base.endswith("_functional") else base


def _runs_composite_on_mps(func, families) -> bool:
    """A CompositeExplicitAutograd kernel is what MPS runs for this op (frexp.Tensor
    calling frexp.Tensor_out, say): emulate it with the mode still on, so the ops
    it calls reach our kernels as they would on a Mac. Only for the families
    of our ops: a CPU or CUDA build of torch has no MPS kernels to ask about, and any
    other composite run this way would decompose where it does not without
    the mode (layer_norm's results move by an ulp)."""
    if _family(func.name()) not in families:
        return False
    if func.is_view:
        # Views compute nothing, and redispatching detach with the mode on
        # re-enters the mode without end.
        return False
    name = func.name()
    return torch._C._dispatch_has_kernel_for_dispatch_key(
        name, "CompositeExplicitAutograd"
    ) and not torch._C._dispatch_has_kernel_for_dispatch_key(name, "MPS")


def _tensor_arguments(func, args, kwargs):
    """Python dispatch hands wrapped-number tensors over as Python numbers;
    the boxed redispatch wants tensors back where the schema says Tensor."""
    schema_args = func._schema.arguments
    args = list(args)
    for i, value in enumerate(args):
        if i < len(schema_args) and _is_number(value) and _wants_tensor(schema_args[i]):
            args[i] = _C.wrapped_number(value)
    for arg in schema_args:
        if arg.name in kwargs and _is_number(kwargs[arg.name]) and _wants_tensor(arg):
            kwargs[arg.name] = _C.wrapped_number(kwargs[arg.name])
    return args, kwargs


def _is_number(value) -> bool:
    return isinstance(value, (bool, int, float, complex))


def _wants_tensor(argument) -> bool:
    return isinstance(argument.type, torch._C.TensorType)


class _Emulate(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self._active = _registry.active_overloads()
        self._families = {_family(o) for o in self._active}
        self._composite_cache: dict = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        # mps_ops_compat holds only our kernels (operators this torch lacks).
        if func.namespace == "mps_ops_compat" or (func.namespace == "aten" and overload_name(func) in self._active):
            args, kwargs = _tensor_arguments(func, args, kwargs)
            return func.redispatch(_MPS_KEYS, *args, **kwargs)
        if func.namespace == "aten":
            composite = self._composite_cache.get(func)
            if composite is None:
                composite = self._composite_cache[func] = _runs_composite_on_mps(func, self._families)
            if composite:
                args, kwargs = _tensor_arguments(func, args, kwargs)
                with self:
                    return func.redispatch(_MPS_KEYS, *args, **kwargs)
        return func(*args, **kwargs)


# Where each backend's kernels take their tensors.
_DEVICES = {"emulator": "cpu", "cuda": "cuda", "metal": "mps"}
# Backends whose device is not MPS: there torch dispatches to its own
# kernels unless ours are routed in.
_ROUTED = ("emulator", "cuda")


def emulate():
    """Route registry ops to our host stubs: on CPU tensors to the emulated
    kernels, on CUDA tensors to the CUDA backend's (no-op on Metal, where
    torch dispatches MPS tensors to them by itself)."""
    if backend in _ROUTED:
        return _Emulate()
    return contextlib.nullcontext()


@contextlib.contextmanager
def native_route():
    """Within it, registry ops on the test device reach our host stubs by C++
    dispatch alone (our stubs registered for the device's own dispatch key,
    torch's kernels for it back on exit): what a Mac does for MPS tensors,
    with no Python dispatch mode. Only the active aten overloads route (no
    composites, no mps_ops_compat ops): callers check that it dispatches what
    emulate() does. A no-op on Metal."""
    if backend not in _ROUTED:
        yield
        return
    # The device's own dispatch key: CPU or CUDA.
    route = _C.NativeRoute(sorted(_registry.active_overloads()), _DEVICES[backend].upper())
    try:
        yield
    finally:
        route.close()


@contextlib.contextmanager
def deterministic_algorithms(on: bool):
    """torch.use_deterministic_algorithms(on) within it, the caller's setting
    (warn_only included) back on exit: some stubs pick their kernels by it
    (put_)."""
    was_on, was_warn_only = torch.are_deterministic_algorithms_enabled(), \
        torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(on)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was_on, warn_only=was_warn_only)


@contextlib.contextmanager
def put_bins(bin_bytes: int | None):
    """put_ through bins of bin_bytes wherever it can take them, whatever its
    sizes (take.mm's put_bin_shift reads MPS_OPS_PUT_BIN_BYTES at each call):
    the way onto that path with small tensors. None leaves the sizes to
    decide. The caller's setting back on exit."""
    saved = os.environ.get("MPS_OPS_PUT_BIN_BYTES")
    if bin_bytes is not None:
        os.environ["MPS_OPS_PUT_BIN_BYTES"] = str(bin_bytes)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("MPS_OPS_PUT_BIN_BYTES", None)
        else:
            os.environ["MPS_OPS_PUT_BIN_BYTES"] = saved


def device() -> str:
    """Where tensors under test live: "cpu" for the emulator, "cuda" for the
    CUDA backend, "mps" on Metal."""
    return _DEVICES[backend]


# Ops whose float64 CPU result is no truth to measure float32 against, with
# the function mpmath (installed with torch, through sympy) computes instead:
# torch's float64 airy_ai is off by up to 2.8e-6 on [-2.5, -2.09], around its
# first zero (-2.338, where it has the wrong sign), so there a float32 result
# nearer the truth would read as the worse one.
_MPMATH_TRUTHS = {"special_airy_ai": "airyai"}


def exact_float64(op: str):
    """fn(x) -> the float64 truth of aten op `op` (its name without overload)
    at float tensor x, or None where torch's float64 CPU result is the truth.
    One element at a time: callers take a few thousand elements."""
    if op not in _MPMATH_TRUTHS:
        return None
    import mpmath

    exact = getattr(mpmath, _MPMATH_TRUTHS[op])

    def truth(x: torch.Tensor) -> torch.Tensor:
        flat = [float(exact(float(v))) for v in x.reshape(-1).tolist()]
        return torch.tensor(flat, dtype=torch.float64).reshape(x.shape)

    return truth
