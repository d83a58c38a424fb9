"""python -m mps_ops.demo: run every registered op on the default backend and
print its result beside torch's CPU result, with the kernels that ran.

Each op runs one call from mps_ops.samples (small inputs inside its domain),
in the form that reaches our kernels (functional where ours, else out= or in
place), one whose values are pinned down where the op has one (an op whose
values are not, such as eig's order and phases, is compared by shape and
dtype), and never one that draws random numbers. On a Mac with the Metal backend the tensors are on ``mps``;
elsewhere the kernels run through the CPU emulator (nothing here ran on Apple
hardware)."""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_flatten, tree_map

import mps_ops
from mps_ops import samples
from mps_ops.testing import device, emulate

SHOWN = 6  # values printed per result


def _shown_overload(record) -> str | None:
    """The overload the demo calls: the first active functional one, else
    the first active one; one whose values are pinned down where there is
    one (eig's order and phases are not)."""
    active = [o for o in record.overloads if o in mps_ops._registry.active_overloads()]
    pinned = [o for o in active if not samples.SAMPLES_BY_OVERLOAD[o].unpinned]
    for overload in pinned or active:
        call = samples.call_for(overload)
        if not call.outputs and not call.inplace:
            return overload
    return (pinned or active or [None])[0]


def _written_or_result(call, result) -> list:
    """The tensors to compare: its outputs, else what it returned (an
    in-place op returns self), else what it wrote in place; a plain value
    (a bool) as a 0-dim tensor."""
    if isinstance(result, (bool, int, float)):
        return [torch.tensor(result)]
    returned = [t for t in tree_flatten(result)[0] if isinstance(t, torch.Tensor)]
    if call.outputs or not returned:
        return [t for n in call.outputs + call.inplace for t in tree_flatten(call.kwargs[n])[0]]
    return returned


def _fmt(tensors) -> str:
    parts = []
    for t in tensors:
        values = t.detach().cpu().reshape(-1)[:SHOWN].tolist()
        more = " ..." if t.numel() > SHOWN else ""
        parts.append(str([round(v, 5) if isinstance(v, float) else v for v in values])[:-1] + more + "]")
    return " | ".join(parts)


def _same(actual, expected) -> bool:
    if len(actual) != len(expected):
        return False
    for a, e in zip(actual, expected):
        tolerance = dict(rtol=1e-5, atol=1e-6) if e.dtype == torch.float32 else dict(rtol=1e-2, atol=1e-2)
        if a.shape != e.shape or not torch.allclose(a.cpu().double(), e.double(), equal_nan=True, **tolerance):
            return False
    return True


def run_one(record) -> tuple:
    """(overload, kernels, ours, cpu, match) for one registry op."""
    overload = _shown_overload(record)
    reference = samples.call_for(overload)
    expected = _written_or_result(reference, reference.run())
    call = samples.call_for(overload)
    call.kwargs = tree_map(lambda t: t.to(device()) if isinstance(t, torch.Tensor) else t, call.kwargs)
    with mps_ops.profile() as prof, emulate():
        result = call.run()
    actual = _written_or_result(call, result)
    if samples.SAMPLES_BY_OVERLOAD[overload].unpinned:
        same = [(a.shape, a.dtype) for a in actual] == [(e.shape, e.dtype) for e in expected]
    else:
        same = _same(actual, expected)
    return overload, prof.kernels(), actual, expected, same


def main() -> int:
    print(f"mps_ops backend: {mps_ops.backend} (tensors on {device()})")
    ran = matches = 0
    kernels_seen: set = set()
    for record in mps_ops.ops():
        if not record.active:
            print(f"\n{record.name}: not registered (torch {torch.__version__} has an MPS kernel of its own)")
            continue
        overload, kernels, actual, expected, same = run_one(record)
        ran += 1
        matches += same
        kernels_seen.update(kernels)
        print(f"\n{record.name}  [{record.policy}] via aten::{overload}")
        print(f"  kernels: {', '.join(kernels) or 'none dispatched'}")
        print(f"  mps_ops: {_fmt(actual)}")
        print(f"  cpu:     {_fmt(expected)}")
        unpinned = samples.SAMPLES_BY_OVERLOAD[overload].unpinned
        print(f"  {('match' if same else 'MISMATCH') + (' (shapes and dtypes: values not pinned down)' if unpinned else '')}")
    print(f"\n{len(mps_ops.ops())} ops, {ran} run, {len(kernels_seen)} kernels, {matches} of {ran} match the CPU")
    return 0 if matches == ran else 1


if __name__ == "__main__":
    raise SystemExit(main())
