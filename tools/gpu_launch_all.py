"""Launch every kernel the sample table reaches, on the live backend, for
tools/gpu_check.sh's compute-sanitizer runs and its GPU-vs-emulator
comparison (a GPU with the CUDA backend; it also runs on the emulator, to
keep it working where no GPU is, and to record the emulator's results).

    python tools/gpu_launch_all.py [--deadline SECONDS] [--report FILE.json]
                                   [--record FILE.pt] [--reverse-groups]
                                   [--only OVERLOAD ...]

Per registry overload (mps_ops/samples/), in every dtype of the op that the
sample builds:
  sample   the sample as it is;
  large    the sample's `large` call, else the sample tiled (every input,
           when all are data of one shape, repeated along its first dim to
           at least TILED_ELEMENTS), so that kernels run at least two full
           threadgroups: a launch of one partial group proves nothing about
           races between groups;
  strided  the large call with every input a view whose last dim has
           stride 2 (the strided kernels);
  lhs/rhs scalar
           for two data inputs of one shape: one of them a 0-dim CPU tensor
           (the kernels taking it as a value);
  binned   (put_) the large call again through put_'s bins (testing.put_bins):
           the kernels put_ takes only for a self of 64 MiB or more
           (SETTING_VARIANTS).
Each call is seeded and followed by a synchronisation, so a fault is charged
to it. The report lists each host name launched with the most threads and
groups one of its launches had, and the calls that raised; --record saves
every call's results (returned and written tensors, on the CPU) by label,
for tools/gpu_compare.py. --reverse-groups runs every threadgroup grid last
group first (the emulator's reverse_group_order; on CUDA it needs
MPS_OPS_CUDA_REVERSE_GROUPS=1 in the environment, read at the first launch).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import sys
import time

import torch

import mps_ops
from mps_ops import samples as sample_table
from mps_ops.testing import deterministic_algorithms, device, emulate, put_bins

mps_ops.enable_overrides()  # their kernels are launched and checked too

# Kernels an op takes only past a size, reached on the large call through the
# setting that lowers the size: variant -> (overloads, the setting around the call).
SETTING_VARIANTS = {"binned": ({"put_"}, lambda: put_bins(256))}

# Two full groups of 1024 threads at 8 elements per thread (element-wise
# kernels on 1- and 2-byte types, shape_limits.h), twice over.
TILED_ELEMENTS = 32768


def inputs(args: dict, sample) -> dict:
    """The tensor arguments the op reads (out= arguments left out)."""
    outs = sample.out_names()
    return {k: v for k, v in args.items() if isinstance(v, torch.Tensor) and k not in outs}


def tiled(args: dict, sample) -> dict | None:
    """Every input repeated along its first dimension to at least
    TILED_ELEMENTS, when all are data tensors of one shape (element-wise
    calls, batched ones); None otherwise. The other dimensions stay, so a
    call that wants 4-D input still gets it; one the op rejects is reported
    as an unusable tiling, not as a failure."""
    tensors = inputs(args, sample)
    if not tensors or any(sample.role(k) != sample_table.DATA for k in tensors):
        return None
    shapes = {tuple(v.shape) for v in tensors.values()}
    first = next(iter(tensors.values()))
    if len(shapes) != 1 or first.dim() == 0 or first.numel() == 0 or first.numel() >= TILED_ELEMENTS:
        return None
    times = math.ceil(TILED_ELEMENTS / first.numel())
    return {k: v.repeat(times, *([1] * (v.dim() - 1))) if k in tensors else v for k, v in args.items()}


def strided(args: dict, sample) -> dict | None:
    """Every input of at least one dim as a view with its last dim at stride
    2 (same values, same device); None where no input has a dim."""
    tensors = {k: v for k, v in inputs(args, sample).items() if v.dim() > 0 and v.numel() > 0}
    if not tensors:
        return None

    def spread(t):
        view = torch.empty(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype, device=t.device)[..., ::2]
        return view.copy_(t)

    return {k: spread(v) if k in tensors else v for k, v in args.items()}


def scalar_operands(args: dict, sample) -> list:
    """(variant, args) with one of two same-shape data inputs as a 0-dim CPU
    tensor (its first value), for binary element-wise ops."""
    tensors = inputs(args, sample)
    if len(tensors) != 2 or any(sample.role(k) != sample_table.DATA for k in tensors):
        return []
    (a, ta), (b, tb) = tensors.items()
    if ta.shape != tb.shape or ta.numel() == 0:
        return []

    def fresh(name, t):  # its own tensors: an earlier variant may write in place
        return dict({k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in args.items()},
                    **{name: t.flatten()[0].cpu()})

    return [(f"{side} scalar", fresh(name, t)) for side, name, t in (("lhs", a, ta), ("rhs", b, tb))]


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


def variants(sample, dtype, built: dict) -> list:
    """(variant, args on the test device) for one dtype; see the module doc."""
    out = [("sample", to_device(built))]
    if sample.large is not None:
        large = sample.large(dtype)
        bigs = [to_device(call) for call in (large if isinstance(large, list) else [large])]
    else:
        big = tiled(built, sample)
        bigs = [to_device(big)] if big is not None else []
    for n, big in enumerate(bigs or [out[0][1]]):  # without a large call, the sample's variants
        suffix = f" {n}" if len(bigs) > 1 else ""
        if bigs:
            out.append((f"large{suffix}", big))
        spread = strided(big, sample)
        if spread is not None:
            out.append((f"strided{suffix}", spread))
        out += [(variant + suffix, call) for variant, call in scalar_operands(big, sample)]
        if bigs:
            out += [(variant + suffix, big) for variant, (overloads, _) in SETTING_VARIANTS.items()
                    if sample.overload in overloads]
    return out


def setting_of(variant: str):
    """The setting SETTING_VARIANTS puts around this variant's call, or none."""
    entry = SETTING_VARIANTS.get(variant.split()[0])
    return entry[1]() if entry else contextlib.nullcontext()


def results(returned, args: dict, sample) -> list:
    """What a call produced, on the CPU: its returned tensors and the
    arguments it writes (out=, in place), in a fixed order."""
    flat = []

    def collect(v):
        if isinstance(v, torch.Tensor):
            # A copy: on CPU tensors .cpu() aliases, and a later variant
            # may write into the same out= tensor.
            flat.append(v.detach().to("cpu", copy=True))
        elif isinstance(v, (list, tuple)):
            for item in v:
                collect(item)

    collect(returned)
    for name in sorted(sample_table.written_names(sample)):
        collect(args.get(name))
    return flat


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
    parser.add_argument("--record", help="save every call's results here (torch.save), by label")
    parser.add_argument("--reverse-groups", action="store_true", help="run threadgroups last to first")
    parser.add_argument("--only", nargs="+", metavar="OVERLOAD", help="launch these overloads' samples only")
    args = parser.parse_args(argv)
    order = contextlib.nullcontext()
    if args.reverse_groups:
        if mps_ops.backend == "emulator":
            order = mps_ops.emulator.reverse_group_order()
        elif os.environ.get("MPS_OPS_CUDA_REVERSE_GROUPS") != "1":
            parser.error("--reverse-groups on the cuda backend needs MPS_OPS_CUDA_REVERSE_GROUPS=1")
    with order:
        return run(args)


def run(args) -> int:
    start = time.monotonic()
    launched: dict[str, dict] = {}
    failures: list[str] = []
    # Calls the op rejected that the sample table does not promise: tilings,
    # and the registry's other dtypes (tried for their kernels' sake).
    untiled: list[str] = []
    calls = 0
    unreached: list[str] = []
    recorded: dict = {}
    for sample, record in sample_table.samples(compat=True):  # compat: ops this torch lacks too
        if args.only and sample.overload not in args.only:
            continue
        own = sample_table.sample_dtypes(sample, record)  # the dtypes the sample is valid in
        dtypes = list(dict.fromkeys(own + list(record.dtypes)))
        for dtype in dtypes:
            label = f"{sample.overload} {dtype}"
            if args.deadline and time.monotonic() - start > args.deadline:
                unreached.append(label)
                continue
            try:
                built = sample.call(dtype)
                calls_of_dtype = variants(sample, dtype, built)
            except Exception:  # the sample does not build in this dtype: nothing to launch
                continue
            modes = (False, True) if sample.deterministic_too else (False,)
            for (variant, call_args), deterministic in itertools.product(calls_of_dtype, modes):
                setting = setting_of(variant)
                variant += " deterministic" if deterministic else ""
                calls += 1
                try:
                    torch.manual_seed(0)  # random ops draw the same numbers in every run
                    with mps_ops.profile() as prof, emulate(), deterministic_algorithms(deterministic), setting:
                        returned = sample.op(**call_args)
                    synchronize()
                except Exception as e:  # recorded, and the run goes on
                    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    line = f"{label} ({variant}): {type(e).__name__}: {first[:300]}"
                    meant_to_work = variant.split()[0] == "sample" and dtype in own
                    (failures if meant_to_work or _is_device_fault(e) else untiled).append(line)
                    continue
                if args.record:
                    recorded[f"{label} {variant}"] = {"unpinned": sample.unpinned,
                                                      "results": results(returned, call_args, sample)}
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
    if args.record:
        torch.save({"backend": mps_ops.backend, "calls": recorded}, args.record)
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
