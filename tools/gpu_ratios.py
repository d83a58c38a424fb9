"""Write each override's `gpu_ratio` in csrc/native_functions.yaml from a whole
benchmarks/bench_gpu.py run: "lowest-highest GPU at commit", the ratio of
our kernel to torch's CUDA kernel over the op's rows (every dtype and shape
the run has), the GPU the JSON names and the commit measured.

    python tools/gpu_ratios.py benchmarks/results/h200-16fcb5b-2026-11-28.json --commit 16fcb5b

An override with no row in the run keeps what it has. Only the value after
`gpu_ratio:` changes (the file's comments and order stay); an override
without the field gets it after its `policy` line. Then run
`python tools/codegen.py --docs docs/ops.md`. NVIDIA figures, never Mac ones.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = ROOT / "csrc" / "native_functions.yaml"
GPU_NAMES = ("H100", "H200")  # what test_overrides.py accepts


def gpu_of(device: str) -> str:
    for name in GPU_NAMES:
        if name in device:
            return name
    raise SystemExit(f"gpu_ratios: the run's device {device!r} is none of {GPU_NAMES}")


def ratios_by_op(run: dict) -> dict[str, tuple[float, float]]:
    by_op: dict[str, list[float]] = {}
    for row in run["rows"]:
        if row.get("ratio") is not None:
            by_op.setdefault(row["kernel"], []).append(row["ratio"])
    return {op: (min(r), max(r)) for op, r in by_op.items()}


def rewrite(text: str, values: dict[str, str]) -> tuple[str, list[str]]:
    """The registry's text with each named override's gpu_ratio set."""
    lines = text.splitlines(keepends=True)
    entry_starts = [i for i, line in enumerate(lines) if re.match(r"  - name: ", line)] + [len(lines)]
    done = []
    for start, end in reversed(list(zip(entry_starts, entry_starts[1:]))):
        name = lines[start].split(":", 1)[1].strip()
        if name not in values:
            continue
        field = f"    gpu_ratio: {values[name]}\n"
        block = lines[start:end]
        at = next((k for k, line in enumerate(block) if line.startswith("    gpu_ratio:")), None)
        if at is None:
            at = next(k for k, line in enumerate(block) if line.startswith("    policy:")) + 1
            block.insert(at, field)
        else:
            block[at] = field
        lines[start:end] = block
        done.append(name)
    return "".join(lines), sorted(done)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a bench_gpu.py JSON of the whole bench")
    parser.add_argument("--commit", required=True, help="the commit the run measured (7+ hex digits)")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[0-9a-f]{7,40}", args.commit):
        raise SystemExit(f"gpu_ratios: {args.commit!r} is no commit hash")
    run = json.loads(args.run.read_text())
    gpu = gpu_of(run["device"])
    registry = yaml.safe_load(REGISTRY.read_text())
    overrides = {e["name"] for e in registry["ops"] if e.get("policy") == "override"}
    measured = ratios_by_op(run)
    values = {op: f"{lo:.2f}-{hi:.2f} {gpu} at {args.commit}" for op, (lo, hi) in measured.items() if op in overrides}
    text, done = rewrite(REGISTRY.read_text(), values)
    REGISTRY.write_text(text)
    missing = sorted(overrides - set(done))
    print(f"gpu_ratios: {len(done)} overrides from {args.run.name} ({gpu} at {args.commit})"
          + (f"; no row for {', '.join(missing)}" if missing else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
