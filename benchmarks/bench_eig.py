"""linalg_eig and linalg_eigvals through our kernel against torch's own, by
matrix size, on the backend's device (an NVIDIA GPU with the CUDA backend:
torch's CUDA eig runs MAGMA's geev, largely on the host CPU):

    python benchmarks/bench_eig.py --json results/eig.json [--sizes 16,64,256] [--budget 300]

Wall-clock seconds per call (each call reads its convergence flags back, so
it ends synchronised), the median of a few calls; beside them our accuracy:
the largest relative residual |A v - lambda v| / |A|_F and the largest
eigenvalue distance to the float64 CPU result over |A|_F. Stops a size list
early when the next size would pass the time budget. NVIDIA figures say
nothing of a Mac's speed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test"))

import torch  # noqa: E402

from eig_checks import matched_distance  # noqa: E402


def _seconds(fn, repeats: int) -> float:
    fn()  # warm-up: loads the kernel
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


def _accuracy(a, values, vectors) -> dict:
    a64 = a.cpu().double()
    scale = float(a64.norm())
    v = vectors.cpu().to(torch.complex128)
    residual = (a64.to(torch.complex128) @ v - v * values.cpu().to(torch.complex128).unsqueeze(-2)).norm(dim=-2)
    truth = torch.linalg.eigvals(a64)
    return {"max_relative_residual": float(residual.max()) / scale,
            "max_eigenvalue_error": matched_distance(values.cpu(), truth) / scale}


def measure(n: int, batch: int, device: str) -> dict:
    from mps_ops.testing import emulate

    torch.manual_seed(n)
    a = torch.randn(batch, n, n, device=device)
    mode = emulate()

    def ours():
        with mode:
            return torch.linalg.eig(a)

    def ours_values():
        with mode:
            return torch.ops.aten._linalg_eigvals(a)

    repeats = 3 if n <= 256 else 1
    row = {"n": n, "batch": batch, "device": device,
           "ours_eig_s": _seconds(ours, repeats), "ours_eigvals_s": _seconds(ours_values, repeats)}
    if device != "cpu":
        row["torch_eig_s"] = _seconds(lambda: torch.linalg.eig(a), repeats)
    values, vectors = ours()
    row.update(_accuracy(a[0], values[0], vectors[0]))
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--sizes", default="16,32,64,128,256,512,1024,2048")
    parser.add_argument("--budget", type=float, default=300.0, help="seconds for the whole run")
    args = parser.parse_args()
    import mps_ops

    device = "cuda" if torch.cuda.is_available() else "cpu"
    rows, begin, last = [], time.perf_counter(), 0.0
    for n in (int(s) for s in args.sizes.split(",")):
        spent = time.perf_counter() - begin
        if last * 12 > args.budget - spent:  # the next size: about 8x the work, three calls
            print(f"n={n}: skipped, past the time budget", flush=True)
            break
        for batch in ((64, 1) if n <= 64 else (1,)):
            started = time.perf_counter()
            row = measure(n, batch, device)
            rows.append(row)
            print(json.dumps(row), flush=True)
            last = time.perf_counter() - started
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"backend": mps_ops.backend, "device": torch.cuda.get_device_name() if
                                     device == "cuda" else "cpu (emulator)", "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
