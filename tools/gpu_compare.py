"""Compare two recordings of tools/gpu_launch_all.py (--record): the GPU's
results against the emulator's for the same inputs, or a GPU run against
one with the threadgroups in reverse order (MPS_OPS_CUDA_REVERSE_GROUPS=1).

    python tools/gpu_compare.py A.pt B.pt [--report FILE.json]

Per call recorded in both: identical (every result the same bits, NaN
payloads included), or, per differing result, its dtype, how many elements
differ and the largest distance in units in the last place (floating
dtypes; an integer or bool difference is never rounding). Calls whose
results are random draws (a sample marked random) are compared only between
two recordings of one backend: the emulator and the GPU draw different
numbers. Prints one line per differing call, grouped by op, then a summary;
exits 0 (the caller judges what may differ: transcendental math, in which
libdevice and the C library round differently, and nothing else).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict

import torch

# The integer type of each floating dtype's width, to order floats by bits.
_BITS = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32,
         torch.float64: torch.int64}


def _ordered(t: torch.Tensor) -> torch.Tensor:
    """Floats mapped to integers that order like the floats (so the distance
    between two is their distance in ulps), in int64."""
    bits = t.contiguous().view(_BITS[t.dtype]).to(torch.int64)
    width = torch.iinfo(_BITS[t.dtype]).bits
    sign = bits < 0
    magnitude = bits & ((1 << (width - 1)) - 1)
    return torch.where(sign, -magnitude, magnitude)


def difference(a: torch.Tensor, b: torch.Tensor) -> dict | None:
    """None if a and b hold the same bits; else what differs."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return {"dtype": str(a.dtype), "what": f"{tuple(a.shape)} {a.dtype} vs {tuple(b.shape)} {b.dtype}"}
    if a.numel() == 0:
        return None
    # Copies with unit stride: a one-element view keeps any stride through
    # reshape and contiguous(), which byte views refuse.
    a, b = (t.reshape(-1).clone(memory_format=torch.contiguous_format) for t in (a, b))
    raw_a = a.view(torch.uint8).view(a.numel(), -1)
    raw_b = b.view(torch.uint8).view(b.numel(), -1)
    differs = (raw_a != raw_b).any(dim=1)
    count = int(differs.sum())
    if count == 0:
        return None
    out = {"dtype": str(a.dtype), "elements": count, "of": a.numel()}
    if a.dtype in _BITS:
        both_nan = a.isnan() & b.isnan()
        ulps = (_ordered(a) - _ordered(b)).abs().masked_fill(both_nan, 0)
        out["max_ulps"] = int(ulps.max())
        one_nan = a.isnan() ^ b.isnan()
        if bool(one_nan.any()):
            out["nan_mismatch"] = int(one_nan.sum())
    return out


def compare(first: dict, second: dict) -> dict:
    same_backend = first["backend"] == second["backend"]
    calls_a, calls_b = first["calls"], second["calls"]
    identical, differing, skipped = [], {}, []
    for label in sorted(set(calls_a) & set(calls_b)):
        a, b = calls_a[label], calls_b[label]
        if (a["unpinned"] or b["unpinned"]) and not same_backend:
            skipped.append(label)
            continue
        if len(a["results"]) != len(b["results"]):
            differing[label] = [{"what": f"{len(a['results'])} vs {len(b['results'])} results"}]
            continue
        found = [d for d in (difference(x, y) for x, y in zip(a["results"], b["results"])) if d]
        if found:
            differing[label] = found
        else:
            identical.append(label)
    return {"first": first["backend"], "second": second["backend"], "identical": len(identical),
            "differing": differing, "unpinned_skipped": skipped,
            "only_first": sorted(set(calls_a) - set(calls_b)), "only_second": sorted(set(calls_b) - set(calls_a))}


def summary(result: dict) -> list[str]:
    lines = []
    by_op = defaultdict(list)
    for label, found in result["differing"].items():
        by_op[label.split(" ")[0]].append((label, found))
    for op, calls in sorted(by_op.items()):
        worst = max((d.get("max_ulps", -1) for _, found in calls for d in found), default=-1)
        exact_kinds = sorted({d["dtype"] for _, found in calls for d in found if "max_ulps" not in d})
        note = f"up to {worst} ulps" if worst >= 0 else ""
        if exact_kinds:
            note += ("; " if note else "") + f"non-float results differ ({', '.join(exact_kinds)})"
        lines.append(f"  {op}: {len(calls)} calls differ, {note}")
        for label, found in calls[:3]:
            lines.append(f"      {label}: {found}")
    lines.append(
        f"gpu_compare: {result['first']} vs {result['second']}: {result['identical']} calls identical, "
        f"{len(result['differing'])} differ ({len(by_op)} ops), {len(result['unpinned_skipped'])} unpinned "
        f"calls not compared, {len(result['only_first'])} + {len(result['only_second'])} calls in one "
        "recording only")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first")
    parser.add_argument("second")
    parser.add_argument("--report", help="write the comparison here (JSON)")
    args = parser.parse_args(argv)
    result = compare(torch.load(args.first), torch.load(args.second))
    if args.report:
        with open(args.report, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
    print("\n".join(summary(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
