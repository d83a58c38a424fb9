"""Timing on a Mac: each case (op, layout, dtype, size) of ours against the
stock path (the CPU-fallback round trip of a `fill` op, torch's own MPS
kernel of an `override` op) with torch.utils.benchmark."""

from __future__ import annotations

import math
import sys

import torch

import mps_ops
from mps_ops.profiling import bytes_to_move
from op_inputs import OPS, layout_inputs, registry_ops, to_device

TIMING_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
DEFAULT_SIZES = (10**3, 10**4, 10**5, 10**6, 10**7)
LAYOUTS = ("dense", "transposed", "strided", "scalar_broadcast")


def can_time() -> tuple:
    """(True, "") on a Mac with MPS and the Metal backend; else (False, why)."""
    mps = getattr(torch.backends, "mps", None)
    available = bool(mps and mps.is_available())
    if available and mps_ops.backend == "metal":
        return True, ""
    why = []
    if not available:
        why.append("torch.backends.mps.is_available() is False")
    if mps_ops.backend != "metal":
        why.append(f"mps_ops.backend is {mps_ops.backend!r}, not 'metal'")
    return False, "; ".join(why)


def shape_for(n: int) -> tuple:
    """(rows, cols) with rows * cols == n, as square as divisibility allows."""
    rows = int(math.isqrt(n))
    while n % rows:
        rows -= 1
    return rows, n // rows


class Progress:
    def __init__(self, total: int):
        try:
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="case", file=sys.stderr)
        except ImportError:
            self._bar = None
        self.total, self.done = total, 0

    def step(self, label: str):
        self.done += 1
        if self._bar is not None:
            self._bar.set_description(label[:40])
            self._bar.update(1)
            return
        width = 30
        filled = width * self.done // max(1, self.total)
        sys.stderr.write(f"\r[{'#' * filled}{' ' * (width - filled)}] {self.done}/{self.total} "
                         f"{label[:40]:40s}")
        sys.stderr.flush()

    def close(self):
        if self._bar is not None:
            self._bar.close()
        else:
            sys.stderr.write("\n")


def _to_mps(result):
    if isinstance(result, tuple):
        return tuple(r.to("mps") for r in result)
    return result.to("mps")


def _cpu_args(args):
    return [a.cpu() for a in args]


OURS_STMT = "fn(*args); sync()"


def _timer(stmt, env, name, layout, dtype, n, what):
    from torch.utils import benchmark

    return benchmark.Timer(stmt, globals=env, label=name,
                           sub_label=f"{layout:16s} {str(dtype)[6:]:8s}",
                           description=f"{what} n={n:.0e}", num_threads=torch.get_num_threads())


def _measure(timer, stmt, env, min_run_time):
    exec(stmt, env)  # warm-up: pipeline state, first touch of the memory
    return timer.blocked_autorange(min_run_time=min_run_time)


def time_all(opts, target: str = "mps", sync=None, measure=None) -> tuple:
    """Times every case; returns (Measurements for Compare, one row dict per case).

    fill ops: ours and the CPU-fallback round trip, case by case. override
    ops: torch's own MPS kernel and ours in the same process, the override
    disabled for the one and enabled for the other around each case (left
    enabled after). target, sync and measure are the device, its
    synchronize and _measure: a test drives the toggling on the CPU."""
    sync = sync or torch.mps.synchronize
    measure = measure or _measure
    cases = []
    for name, record in registry_ops().items():
        if (opts.ops and name not in opts.ops) or name not in OPS:
            continue
        # An op without a floating dtype (gcd) is timed in its operand makers' dtype.
        dtypes = [d for d in TIMING_DTYPES if d in record.dtypes] or [OPS[name].dtype]
        dtypes = [d for d in dtypes if not opts.dtypes or d in opts.dtypes]
        for layout in opts.layouts:
            for dtype in dtypes:
                for n in opts.sizes:
                    cases.append((name, record, layout, dtype, n))
    progress = Progress(len(cases) * 2)
    results, rows = [], []

    def prepare(name, record, layout, dtype, n):
        rows_, cols = shape_for(n)
        torch.manual_seed(0)
        args = to_device(layout_inputs(OPS[name], layout, rows_, cols, dtype), target)
        env = {"fn": OPS[name].fn, "args": args, "sync": sync, "to_mps": _to_mps, "cpu_args": _cpu_args}
        row = {"op": name, "layout": layout, "dtype": str(dtype)[6:], "numel": n,
               "policy": record.policy}
        return env, row

    def finish(env, row, ours, stock, stock_desc):
        results.extend([ours, stock])
        result = env["fn"](*env["args"])
        moved = bytes_to_move(env["args"], result if isinstance(result, tuple) else (result,))
        row.update(ours_us=ours.median * 1e6, stock_us=stock.median * 1e6,
                   speedup=stock.median / ours.median, stock=stock_desc, bytes_to_move=moved,
                   ours_gbps=moved / ours.median / 1e9)
        rows.append(row)

    fallback = "to_mps(fn(*cpu_args(args))); sync()"
    for case in cases:
        name, record, layout, dtype, n = case
        label = f"{name} {layout} {str(dtype)[6:]} {n:.0e}"
        env, row = prepare(*case)
        if record.policy == "override":
            mps_ops.disable_overrides([name])
            progress.step(f"stock {label}")
            stock = measure(_timer(OURS_STMT, env, name, layout, dtype, n, "stock mps"), OURS_STMT, env,
                            opts.min_run_time)
            mps_ops.enable_overrides([name])
            now = registry_ops()[name]
            if not now.active:
                row["note"] = now.status
                rows.append(row)
                progress.step(label)
                continue
            progress.step(label)
            ours = measure(_timer(OURS_STMT, env, name, layout, dtype, n, "mps_ops"), OURS_STMT, env,
                           opts.min_run_time)
            finish(env, row, ours, stock, "stock mps")
            continue
        progress.step(f"stock {label}")
        if not record.active:
            row["note"] = "torch has its own MPS kernel: ours is not registered"
            rows.append(row)
            progress.step(label)
            continue
        stock = measure(_timer(fallback, env, name, layout, dtype, n, "cpu fallback"), fallback,
                        env, opts.min_run_time)
        progress.step(label)
        ours = measure(_timer(OURS_STMT, env, name, layout, dtype, n, "mps_ops"), OURS_STMT, env,
                       opts.min_run_time)
        finish(env, row, ours, stock, "cpu fallback")
    progress.close()
    return results, rows
