"""bench_ops.py --memory N (a Mac): driver memory growth over N distinct
input shapes, torch's own MPS kernel against ours, for each override op,
toggled in one process. MPSGraph compiles and caches one graph per input
shape and never evicts it, so variable-shape training grows driver memory
without bound; a native kernel has one pipeline per dtype."""

from __future__ import annotations

import json
from pathlib import Path

import torch

import mps_ops
from op_inputs import OPS, layout_inputs, registry_ops, to_device


def distinct_shapes(count: int) -> list:
    """count (rows, cols) shapes, no two alike."""
    return [(16 + k, 64 + 3 * k) for k in range(count)]


def memory_rows(opts, count: int, target: str = "mps", sync=None, allocated=None, release=None) -> list:
    """One row per override op: driver bytes left allocated after `count`
    calls on distinct shapes (the tensors themselves released), stock then
    ours. target, sync, allocated and release are the device,
    torch.mps.synchronize, torch.mps.driver_allocated_memory and
    torch.mps.empty_cache: a test drives the toggling on the CPU."""
    sync = sync or torch.mps.synchronize
    allocated = allocated or torch.mps.driver_allocated_memory
    release = release or torch.mps.empty_cache
    rows = []
    for name, record in registry_ops().items():
        if record.policy != "override" or name not in OPS or (opts.ops and name not in opts.ops):
            continue
        row = {"op": name, "shapes": count}
        for mode in ("stock", "ours"):
            (mps_ops.disable_overrides if mode == "stock" else mps_ops.enable_overrides)([name])
            record = registry_ops()[name]
            if mode == "ours" and not record.active:
                row["note"] = record.status
                break
            release()
            sync()
            before = allocated()
            for rows_, cols in distinct_shapes(count):
                args = to_device(layout_inputs(OPS[name], "dense", rows_, cols, torch.float32), target)
                OPS[name].fn(*args)
                sync()
            del args
            release()
            sync()
            row[f"{mode}_growth_bytes"] = allocated() - before
        rows.append(row)
    return rows


def write_memory(rows: list, out: str) -> str:
    """bench_ops_memory.json and .md in `out`; returns the markdown."""
    lines = ["| op | shapes | stock growth (MB) | ours growth (MB) |", "|---|---|---|---|"]
    for r in rows:
        stock, ours = r.get("stock_growth_bytes"), r.get("ours_growth_bytes")
        cell = lambda v: f"{v / 2**20:.1f}" if v is not None else r.get("note", "-")  # noqa: E731
        lines.append(f"| {r['op']} | {r['shapes']} | {cell(stock)} | {cell(ours)} |")
    markdown = "\n".join(lines) + "\n"
    path = Path(out)
    path.mkdir(parents=True, exist_ok=True)
    (path / "bench_ops_memory.json").write_text(json.dumps(rows, indent=1))
    (path / "bench_ops_memory.md").write_text(markdown)
    return markdown
