"""The op table and the registration policy.

`fill` overloads are registered for the MPS dispatch key only where the
running torch has no MPS kernel of its own. `override` overloads replace a
stock MPS kernel, and only where the registry records that kernel as
MPSGraph in the running release (its `mpsgraph` releases; a release it does
not list, 2.16 say, gets none), and only once the user enables them:
``enable_overrides()`` (all) or ``enable_overrides(["_softmax", ...])`` by
the names ``ops()`` shows, ``disable_overrides(...)``, or
``MPS_OPS_OVERRIDES=1`` (all) or a comma-separated list of names at import.
`repair` overloads replace a stock MPS kernel that fails for some inputs (it
raises where ours computes), by default, in the releases the registry lists
for them (its `repairs`).
"""

from __future__ import annotations

import ast
import os
import threading
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import torch

from . import _C


class Range(NamedTuple):
    """Where samples draw one input of a shaped op from: uniformly from
    [lo, hi], or (integers) from the whole numbers lo..hi."""

    lo: float
    hi: float
    integers: bool


@dataclass(frozen=True)
class OpRecord:
    name: str  # e.g. "aten::special_ndtri"
    overloads: tuple  # e.g. ("special_ndtri", "special_ndtri.out")
    opinfo: tuple  # OpInfo names that test it
    forms: tuple  # which of their call forms (functional, out, inplace) reach our kernels
    dtypes: tuple  # torch.dtype objects
    policy: str  # "fill", "override" or "repair"
    active: bool  # registered for MPS in this process
    # A standard element-wise shape (SHAPES in tools/codegen.py: "unary_float",
    # ...) whose shared stubs serve the op, or "" (the op has stubs of its own).
    shape: str = ""
    # A shaped op's sample domain: ((argument name or "*" for every input, Range), ...).
    domain: tuple = ()
    # An override's releases ("2.9", ...) whose stock MPS kernel is MPSGraph.
    mpsgraph: tuple = ()
    # A repair's releases whose stock MPS kernel fails for inputs ours takes.
    repairs: tuple = ()
    # OpInfos whose input gradients reach it (a backward op's).
    grad_opinfo: tuple = ()
    # An override's speed against torch's CUDA kernel for the same op on an
    # NVIDIA GPU ("0.96-1.62 H200 at <commit>", tools/gpu_ratios.py), or
    # "unmeasured"; "" for a fill.
    # A stand-in for an Apple GPU, never a Mac figure.
    gpu_ratio: str = ""
    # Why it is active or not in this process, in words.
    status: str = ""


class _Entry(NamedTuple):
    name: str
    policy: str
    dtypes: tuple
    opinfo: tuple
    forms: tuple
    shape: str
    domain: tuple
    mpsgraph: tuple
    repairs: tuple
    grad_opinfo: tuple
    gpu_ratio: str
    overloads: tuple

    @property
    def short_name(self) -> str:
        return self.name.split("::", 1)[-1]


def _parse(raw) -> _Entry:
    name, policy, dtypes, opinfo, forms, shape, domain, mpsgraph, repairs, grad_opinfo, gpu_ratio, overloads = raw
    return _Entry(name, policy, tuple(getattr(torch, d) for d in dtypes.split(",") if d),
                  tuple(o for o in opinfo.split(",") if o), tuple(forms.split(",")), shape,
                  tuple((arg, Range(*r)) for arg, r in ast.literal_eval(domain)),
                  tuple(r for r in mpsgraph.split(",") if r), tuple(r for r in repairs.split(",") if r),
                  tuple(o for o in grad_opinfo.split(",") if o),
                  gpu_ratio or ("unmeasured" if policy == "override" else ""), tuple(overloads))


_RECORDS = [_parse(r) for r in _C.op_records()]
_active_overloads: set = set()


def torch_release(version: str | None = None) -> str:
    """The running (or the given) torch version as major.minor: "2.13"."""
    return ".".join((version or torch.__version__).split("+")[0].split(".")[:2])


# The releases the registry has MPSGraph data for: a later one is unknown.
_KNOWN_RELEASES = frozenset(r for e in _RECORDS for r in e.mpsgraph)


def _has_stock_mps_kernel(overload: str) -> bool:
    return torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{overload}", "MPS")


def _exists(overload: str) -> bool:
    """Whether the running torch defines the overload (newer ops, such as
    _upsample_lanczos2d_aa, are absent from older releases)."""
    name, _, overload_name = overload.partition(".")
    try:
        torch._C._dispatch_find_schema_or_throw(f"aten::{name}", overload_name)
    except RuntimeError:
        return False
    return True


# Overloads the registry gives a schema (operators some releases we support
# lack), also defined as torch.ops.mps_ops_compat.<op>: on a release without
# the aten operator, the tests and the GPU launcher reach its kernels there.
_COMPAT_OVERLOADS = frozenset(_C.register_compat())


def compat_overloads() -> frozenset:
    return _COMPAT_OVERLOADS


def op_overload(overload: str, namespace: str | None = None):
    """The OpOverload of a registry overload ("take.out") in `namespace`; by
    default aten's, else, where the running torch lacks the operator,
    mps_ops_compat's."""
    name, _, overload_name = overload.partition(".")
    if namespace is None:
        namespace = "aten" if _exists(overload) else "mps_ops_compat"
    return getattr(getattr(getattr(torch.ops, namespace), name), overload_name or "default")


def _override_allowed(entry: _Entry) -> bool:
    """An override replaces only a kernel the registry knows to be MPSGraph
    in the running release."""
    return torch_release() in entry.mpsgraph


def _activate_fills_and_repairs() -> None:
    """Fills where the running torch lacks the kernel; repairs in the releases
    whose stock kernel they repair."""
    wanted = [o for e in _RECORDS if e.policy == "fill" for o in e.overloads
              if _exists(o) and not _has_stock_mps_kernel(o)]
    wanted += [o for e in _RECORDS if e.policy == "repair" and torch_release() in e.repairs for o in e.overloads
               if _exists(o)]
    _C.activate(wanted)
    _active_overloads.update(wanted)


def _overrides_named(names) -> list:
    """The override entries `names` picks (all for None); names as ops()
    shows them ("aten::_softmax") or without the namespace ("_softmax")."""
    overrides = [e for e in _RECORDS if e.policy == "override"]
    if names is None:
        return overrides
    if isinstance(names, str):
        names = [names]
    by_name = {e.short_name: e for e in overrides}
    picked, unknown = [], []
    for name in names:
        namespace, _, short = str(name).strip().rpartition("::")
        entry = by_name.get(short.strip()) if namespace in ("", "aten") else None
        (picked if entry else unknown).append(entry or name)
    if unknown:
        raise ValueError(f"mps_ops: no override op named {', '.join(map(repr, unknown))}; "
                         f"the overrides are {', '.join(sorted(by_name)) or 'none'}")
    return picked


# Held from reading _active_overloads to updating it: two threads enabling
# and disabling at once could otherwise leave the set saying an override is
# on while its kernel is gone (or the reverse, which disable then skips).
_overrides_lock = threading.Lock()


def enable_overrides(names=None) -> None:
    """Replace torch's MPSGraph kernels with ours: all `override` ops, or
    those named (as ``ops()`` shows them). An op whose stock kernel is not
    MPSGraph in the running release stays off (``ops()`` says why)."""
    refused = []
    with _overrides_lock:
        wanted = []
        for entry in _overrides_named(names):
            if not _override_allowed(entry):
                refused.append(entry.short_name)
                continue
            wanted += [o for o in entry.overloads if _exists(o) and o not in _active_overloads]
        _C.activate(wanted)
        _active_overloads.update(wanted)
    if refused and names is not None:
        warnings.warn(f"mps_ops: torch {torch_release()}'s own MPS kernel stays for {', '.join(refused)} "
                      "(see mps_ops.ops())", stacklevel=2)


def disable_overrides(names=None) -> None:
    """Give back torch's own MPS kernels: of all `override` ops, or those named."""
    with _overrides_lock:
        gone = [o for e in _overrides_named(names) for o in e.overloads if o in _active_overloads]
        _C.deactivate(gone)
        _active_overloads.difference_update(gone)


def _status(entry: _Entry, active: bool) -> str:
    release = torch_release()
    if entry.policy == "fill":
        if active:
            return f"fills a gap: torch {release} has no MPS kernel"
        if not any(_exists(o) for o in entry.overloads):
            return f"inactive: torch {release} lacks the operator"
        return f"inactive: torch {release} has its own MPS kernel"
    if entry.policy == "repair":
        if active:
            return f"repairs torch {release}'s MPS kernel, which fails for some inputs"
        return f"inactive: the registry knows no failing MPS kernel in torch {release}"
    if active:
        return f"active: replaces torch {release}'s MPSGraph kernel"
    if _override_allowed(entry):
        return f"off: enable_overrides() would replace torch {release}'s MPSGraph kernel"
    if release in _KNOWN_RELEASES:
        return f"unavailable: torch {release}'s MPS kernel is native Metal"
    return f"unavailable: the registry has no data for torch {release}"


def ops() -> list:
    """One record per registry op, in registry order."""
    records = []
    for e in _RECORDS:
        active = any(o in _active_overloads for o in e.overloads)
        records.append(OpRecord(name=e.name, overloads=e.overloads, opinfo=e.opinfo, forms=e.forms, dtypes=e.dtypes,
                                policy=e.policy, active=active, shape=e.shape, domain=e.domain,
                                mpsgraph=e.mpsgraph, repairs=e.repairs, grad_opinfo=e.grad_opinfo, gpu_ratio=e.gpu_ratio,
                                status=_status(e, active)))
    return records


def active_overloads() -> frozenset:
    return frozenset(_active_overloads)


def _enable_from_environment(value: str) -> None:
    """MPS_OPS_OVERRIDES: "1" for all, else a comma-separated list of names
    ("" or "0": none). A name it does not know is a warning, not an import
    error, and then none is enabled: a mistyped list leaves torch's kernels
    in place, as no list would."""
    value = value.strip()
    if value in ("", "0"):
        return
    try:
        enable_overrides(None if value == "1" else [n for n in value.split(",") if n.strip()])
    except ValueError as e:
        warnings.warn(f"MPS_OPS_OVERRIDES={value!r}: {e}; none of the list is enabled", stacklevel=2)


_activate_fills_and_repairs()
_enable_from_environment(os.environ.get("MPS_OPS_OVERRIDES", ""))
