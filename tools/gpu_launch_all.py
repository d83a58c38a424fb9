"""Launch every kernel the sample table reaches, on the live backend, for
tools/gpu_check.sh's compute-sanitizer runs (a GPU with the CUDA backend;
it also runs on the emulator, to keep it working where no GPU is).

    python tools/gpu_launch_all.py [--deadline SECONDS] [--report FILE.json]

Per registry overload (mps_ops/samples/): the sample in every dtype of the
op that the sample builds, once as it is and once tiled (every tensor
argument, when all are data of one shape, repeated to at least 8192
elements), so that element-wise kernels run at least two full threadgroups:
a launch of one partial group proves nothing about races between groups.
Each call is followed by a synchronisation, so a fault is charged to it.
The report lists each host name launched with the most threads and groups
one of its launches had, and the calls that raised.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import torch

import mps_ops
from mps_ops import samples as sample_table
from mps_ops.testing import device, emulate

TILED_ELEMENTS = 8192


def tiled(args: dict, sample) -> dict | None:
    """Every tensor argument repeated along its first dimension to at least
    TILED_ELEMENTS, when all are data tensors of one shape (element-wise
    calls, batched ones); None otherwise. The other dimensions stay, so a
    call that wants 4-D input still gets it; one the op rejects is reported
    as an unusable tiling, not as a failure."""
    tensors = {k: v for k, v in args.items() if isinstance(v, torch.Tensor)}
    if not tensors or any(sample.role(k) != sample_table.DATA for k in tensors):
        return None
    shapes = {tuple(v.shape) for v in tensors.values()}
    first = next(iter(tensors.values()))
    if len(shapes) != 1 or first.dim() == 0 or first.numel() == 0 or first.numel() >= TILED_ELEMENTS:
        return None
    times = math.ceil(TILED_ELEMENTS / first.numel())
    return {k: v.repeat(times, *([1] * (v.dim() - 1))) if isinstance(v, torch.Tensor) else v
            for k, v in args.items()}


def to_device(args: dict) -> dict:
    """Tensors, and tensors in lists (fused Adagrad's), on the test device."""
    target = device()

    def move(v):
        if isinstance(v, torch.Tensor):
            return v.to(target)
        if isinstance(v, list):
            return [move(t) for t in v]
        return v

    return {k: move(v) for k, v in args.items()}


def synchronize() -> None:
    if device() == "cuda":
        torch.cuda.synchronize()


def _is_device_fault(e: Exception) -> bool:
    """A CUDA error (a fault in a kernel, a launch failure) is never a
    rejected tiling."""
    return "CUDA" in str(e) or "mps_ops cuda" in str(e)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deadline", type=float, default=0,
                        help="stop starting new calls after this many seconds (0: none)")
    parser.add_argument("--report", help="write the launches and failures here (JSON)")
    args = parser.parse_args(argv)
    start = time.monotonic()
    launched: dict[str, dict] = {}
    failures: list[str] = []
    # Calls the op rejected that the sample table does not promise: tilings,
    # and the registry's other dtypes (tried for their kernels' sake).
    untiled: list[str] = []
    calls = 0
    unreached: list[str] = []
    for sample, record in sample_table.samples():
        own = sample_table.sample_dtypes(sample, record)  # the dtypes the sample is valid in
        dtypes = list(dict.fromkeys(own + list(record.dtypes)))
        for dtype in dtypes:
            label = f"{sample.overload} {dtype}"
            if args.deadline and time.monotonic() - start > args.deadline:
                unreached.append(label)
                continue
            try:
                built = sample.call(dtype)
            except Exception:  # the sample does not build in this dtype: nothing to launch
                continue
            variants = [("sample", built)]
            big = tiled(built, sample)
            if big is not None:
                variants.append(("tiled", big))
            for variant, call_args in variants:
                calls += 1
                try:
                    with mps_ops.profile() as prof, emulate():
                        sample.op(**to_device(call_args))
                    synchronize()
                except Exception as e:  # recorded, and the run goes on
                    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    line = f"{label} ({variant}): {type(e).__name__}: {first[:300]}"
                    meant_to_work = variant == "sample" and dtype in own
                    (failures if meant_to_work or _is_device_fault(e) else untiled).append(line)
                    continue
                for d in prof.dispatches:
                    threads = d.thread_count
                    group = d.group_size[0] * d.group_size[1] * d.group_size[2]
                    full_groups = threads // group if group else 0
                    seen = launched.setdefault(d.kernel, {"threads": 0, "full_groups": 0})
                    seen["threads"] = max(seen["threads"], threads)
                    seen["full_groups"] = max(seen["full_groups"], full_groups)
    names = sorted(mps_ops._C.kernel_names())
    never = [n for n in names if n not in launched]
    small = sorted(n for n, s in launched.items() if s["full_groups"] < 2)
    report = {"backend": mps_ops.backend, "calls": calls, "launched": launched,
              "never_launched": never, "under_two_full_groups": small, "failures": failures, "untiled": untiled,
              "unreached": unreached, "seconds": round(time.monotonic() - start, 1)}
    if args.report:
        with open(args.report, "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)
    print(f"gpu_launch_all: {mps_ops.backend}: {calls} calls, {len(launched)}/{len(names)} host names "
          f"launched ({len(small)} with fewer than two full threadgroups), {len(failures)} calls "
          f"raised, {len(untiled)} extra variants rejected, {len(unreached)} not reached before the deadline, {report['seconds']} s")
    for line in failures:
        print(f"  raised: {line}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
