"""The op table and the registration policy.

`fill` overloads are registered for the MPS dispatch key only where the
running torch has no MPS kernel of its own; `override` overloads only once
the user enables overrides (``enable_overrides()`` or ``MPS_OPS_OVERRIDES=1``).
"""

from __future__ import annotations

import ast
import os
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
    policy: str  # "fill" or "override"
    active: bool  # registered for MPS in this process
    # A standard element-wise shape (SHAPES in tools/codegen.py: "unary_float",
    # ...) whose shared stubs serve the op, or "" (the op has stubs of its own).
    shape: str = ""
    # A shaped op's sample domain: ((argument name or "*" for every input, Range), ...).
    domain: tuple = ()


def _parse(raw) -> list:
    name, policy, dtypes, opinfo, forms, shape, domain, overloads = raw
    return [name, policy, tuple(getattr(torch, d) for d in dtypes.split(",") if d),
            tuple(o for o in opinfo.split(",") if o), tuple(forms.split(",")), shape,
            tuple((arg, Range(*r)) for arg, r in ast.literal_eval(domain)), tuple(overloads)]


_RECORDS = [_parse(r) for r in _C.op_records()]
_active_overloads: set = set()


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


def _activate(policy: str) -> None:
    wanted = []
    for _name, op_policy, _dtypes, _opinfo, _forms, _shape, _domain, overloads in _RECORDS:
        if op_policy != policy:
            continue
        for overload in overloads:
            if overload in _active_overloads:
                continue
            if not _exists(overload) or (policy == "fill" and _has_stock_mps_kernel(overload)):
                continue
            wanted.append(overload)
    _C.activate(wanted)
    _active_overloads.update(wanted)


def enable_overrides() -> None:
    """Register the `override` ops, replacing torch's own MPS kernels for them."""
    _activate("override")


def ops() -> list:
    """One record per registry op, in registry order."""
    records = []
    for name, policy, dtypes, opinfo, forms, shape, domain, overloads in _RECORDS:
        records.append(OpRecord(name=name, overloads=overloads, opinfo=opinfo, forms=forms, dtypes=dtypes,
                                policy=policy, active=any(o in _active_overloads for o in overloads),
                                shape=shape, domain=domain))
    return records


def active_overloads() -> frozenset:
    return frozenset(_active_overloads)


_activate("fill")
if os.environ.get("MPS_OPS_OVERRIDES") == "1":
    enable_overrides()
