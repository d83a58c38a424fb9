"""Our kernels against torch's own CUDA kernels on an NVIDIA GPU (issue 13).

    python benchmarks/bench_gpu.py --json results/bench_gpu.json [--families reduction,pooling]
    python benchmarks/bench_gpu.py --from-json results/bench_gpu.json   # table and chart again
    ncu --profile-from-start off ... python benchmarks/bench_gpu.py --profile --families logit_

Needs the CUDA backend (tools/gpu_check.sh --bench builds it and runs this).
The GPU stands in for an Apple GPU: it shows faults of kernel design
(coalescing, work per thread, index arithmetic, occupancy) that cost on both;
its figures are NVIDIA figures and say nothing of speed on a Mac.

Each case (benchmarks/gpu_cases.py) runs one call on inputs of at least
256 MB made on the GPU: ours through mps_ops.testing.emulate() (our stubs and
kernels), torch's plainly (its CUDA kernels). Ours is timed through
mps_ops.testing.native_route() (our stubs registered for the CUDA dispatch
key while it runs: C++ dispatch, as a Mac's for MPS tensors) where that runs
the kernels the mode ran (the row's `route`: "native"), else through the
mode ("mode"). Timing: CUDA events around one call enqueued while the GPU
waits on torch.cuda._sleep, so the host's dispatch cost stays out and the
figure is the GPU's time; the median of CALLS calls, each after its own
sleep. (Ops that read a flag back wait for the GPU inside the call: in a
batch, every call after the first would expose the host's whole dispatch
cost again. Each call after its own sleep exposes only what follows the
wait: the readback's round trip, which a Mac pays too, and under the mode
the mode's own return path, which a Mac does not: hence the route.) GB/s count
the bytes the call must move (mps_ops.profiling.bytes_to_move: inputs read
once, outputs written once), the same for both sides, so the ratio is the
ratio of times. A plain device-to-device copy measured in the same run is the
ceiling (copy_gbps).

`bound` is a rule (issue 13): `memory` where torch's kernel reaches at least
40% of the copy bandwidth; else `weak-baseline` where our kernel's
arithmetic per byte is low (gpu_cases.HIGH_ARITHMETIC names the others),
whose floor is min(0.5 x copy, 1.0 x torch); else `compute`, reported with
its accuracy against float64 (mpmath's where torch's float64 is no truth:
airy_ai) beside the ratio. A row meets its target when
memory: ratio >= 0.8; weak-baseline: ours >= its floor; compute: reported.
A row whose call waits for the GPU (`waits_for_gpu`: a flag or value read
back at the call, as DESIGN.md's errors at the call need) also times torch's
op followed by torch.cuda.synchronize() in the same way (`torch_synced_gbps`,
`ratio_to_synced`): the same round trip paid by both, beside the rule's
ratio, which stays against torch's op alone; and ours again with error
checks deferred (mps_ops.set_error_checks("deferred"): `ours_deferred_gbps`,
`ratio_deferred` against torch's op alone, `waits_when_deferred`), the mode
that does not wait.

Writes the JSON (rows: family, kernel, shape, dtype, ours_gbps, torch_gbps,
copy_gbps, ratio, bound, target_met, and more; plus device), a Markdown table
beside it (.md) and, with matplotlib, a chart (.png).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's mps_ops
sys.path.insert(0, str(HERE))

import torch  # noqa: E402

MEMORY_SHARE = 0.4  # torch at >= 40% of the copy bandwidth: `memory`
MEMORY_RATIO = 0.8  # ... then ours must reach 0.8x torch
WEAK_COPY_SHARE, WEAK_TORCH_RATIO = 0.5, 1.0  # weak-baseline floor: min(0.5 x copy, 1.0 x torch)
CALLS = 9
ACCURACY_ELEMENTS = 1 << 20
EXACT_TRUTH_ELEMENTS = 4096  # mpmath, one element at a time: some 0.2 s
ACCURACY_ROWS = 64


def _sleep_cycles_per_second() -> float:
    """torch.cuda._sleep spins a number of clock cycles; how many make a second."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1000)  # loads the kernel
    start.record()
    torch.cuda._sleep(10_000_000)
    end.record()
    torch.cuda.synchronize()
    return 10_000_000 / (start.elapsed_time(end) / 1e3)


def idle_host_seconds(fn) -> float:
    """The host's time for one fn() on an idle GPU: its enqueue time, and for
    a call that waits for the GPU, its kernels and the round trip too."""
    torch.cuda.synchronize()
    begin = time.perf_counter()
    fn()
    seconds = time.perf_counter() - begin
    torch.cuda.synchronize()
    return seconds


def gpu_seconds(fn, cycles_per_second: float) -> float:
    """Median GPU time of one fn() call: CALLS calls, each between two events
    and enqueued while the GPU sleeps through the host's enqueue time."""
    fn()  # warm-up: loads (JIT-compiles) the kernels, fills the allocator
    host = idle_host_seconds(fn)
    sleep_cycles = int(min(2 * host + 0.005, 2.0) * cycles_per_second)
    times = []
    for _ in range(CALLS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(sleep_cycles)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def waits_for_gpu(fn, cycles_per_second: float) -> bool:
    """Whether fn() returns only once the GPU has run what was queued before
    it (a flag or a value read back at the call). Called while the GPU sleeps
    through many times fn's own host time, it then returns after the sleep;
    one that only enqueues returns long before."""
    sleep = 0.02 + 4 * idle_host_seconds(fn)
    torch.cuda._sleep(int(sleep * cycles_per_second))
    begin = time.perf_counter()
    fn()
    behind_sleep = time.perf_counter() - begin
    torch.cuda.synchronize()
    return behind_sleep >= sleep / 2


def deferred_gpu_seconds(fn, cycles_per_second: float) -> tuple[float, bool]:
    """gpu_seconds and waits_for_gpu of fn with error checks deferred
    (mps_ops.set_error_checks): a flagged call then no longer waits."""
    import mps_ops

    mps_ops.set_error_checks("deferred")
    try:
        return gpu_seconds(fn, cycles_per_second), waits_for_gpu(fn, cycles_per_second)
    finally:
        mps_ops.set_error_checks("at_call")  # runs the checks left (the inputs are good)


def copy_gbps(cycles_per_second: float) -> float:
    src = torch.randn(1 << 28, device="cuda")
    dst = torch.empty_like(src)
    seconds = gpu_seconds(lambda: dst.copy_(src), cycles_per_second)
    return 2 * src.numel() * src.element_size() / seconds / 1e9


def _gbps(moved: int, seconds: float) -> float:
    """GB/s to four significant figures: a compute row (a decomposition) moves
    a fraction of a GB/s, which one decimal place rounds to 0.0 or makes two
    different speeds look equal."""
    return float(f"{moved / seconds / 1e9:.4g}")


def _normwise_relative_error(result, truth) -> float:
    """||result - truth|| / ||truth|| (Frobenius, over the whole result):
    LAPACK's measure for a matrix result, where an entry near zero makes
    the element-wise relative error meaningless."""
    result, truth = result.double().cpu(), truth.double().cpu()
    return float(torch.linalg.vector_norm(result - truth) / torch.linalg.vector_norm(truth).clamp_min(1e-300))


def _max_relative_error(result, truth) -> float:
    result, truth = result.double().cpu(), truth.double().cpu()
    finite = torch.isfinite(truth) & torch.isfinite(result)
    scale = truth.abs().clamp_min(torch.finfo(torch.float32).tiny)
    errors = ((result - truth).abs() / scale)[finite]
    return float(errors.max()) if errors.numel() else 0.0


def accuracy_inputs(case, inputs) -> list:
    """A piece of the inputs small enough for the float64 truth on the CPU:
    an element-wise op's first ACCURACY_ELEMENTS elements; any other op's
    first ACCURACY_ROWS rows (of each input whose first dim is the first
    input's: pdist's points, a loss's scores and targets)."""
    if case.family.startswith("elementwise"):
        return [t.reshape(-1)[:ACCURACY_ELEMENTS] if t.dim() > 0 else t for t in inputs]
    rows = inputs[0].size(0) if inputs[0].dim() > 0 else None
    return [t[:ACCURACY_ROWS] if t.dim() > 0 and t.size(0) == rows else t for t in inputs]


def accuracy(case, inputs) -> dict:
    """Max relative error of ours and torch's against the op in float64 on
    the CPU, on accuracy_inputs (the first tensor of the result); for an
    element-wise op whose float64 is no truth (mps_ops.testing.exact_float64),
    against mpmath's on the first EXACT_TRUTH_ELEMENTS."""
    from mps_ops.testing import emulate, exact_float64

    small = accuracy_inputs(case, inputs)
    exact = exact_float64(case.kernel) if case.family.startswith("elementwise") and len(small) == 1 else None
    if exact is not None:
        small = [small[0][:EXACT_TRUTH_ELEMENTS]]
        truth = exact(small[0].cpu())
    else:
        truth = case.call(*[t.cpu().double() if t.is_floating_point() else t.cpu() for t in small])
    with emulate():
        ours = case.call(*[t.clone() for t in small])
    theirs = case.call(*[t.clone() for t in small])
    from mps_ops.profiling import tensors_in

    first = lambda r: tensors_in(r)[0]  # noqa: E731
    if case.matrix_results:
        return {"ours_normwise_error": _normwise_relative_error(first(ours), first(truth)),
                "torch_normwise_error": _normwise_relative_error(first(theirs), first(truth))}
    return {"ours_max_rel_error": _max_relative_error(first(ours), first(truth)),
            "torch_max_rel_error": _max_relative_error(first(theirs), first(truth))}


def measure(case, cycles_per_second: float, copy: float) -> dict:
    import mps_ops
    from mps_ops.profiling import bytes_to_move, tensors_in
    from mps_ops.testing import emulate, native_route

    inputs = case.make()
    row = {"family": case.family, "kernel": case.kernel, "shape": list(case.shape),
           "dtype": str(case.dtype).replace("torch.", ""), "copy_gbps": round(copy, 1)}
    inplace = case.kernel.endswith("_")  # timed on the same inputs again and again

    # One mode for every call: a Mac routes the op in C++, with no Python
    # mode at all, and a new mode per call costs the host more than entering
    # one (what an op that reads a flag back, waiting for the GPU, exposes).
    mode = emulate()

    def ours():
        with mode:
            return case.call(*inputs)

    with mps_ops.profile() as prof:
        result = ours()
    torch.cuda.synchronize()
    if not prof.dispatches:
        row.update(error="ours ran no kernel of ours", bound="none")
        return row
    moved = bytes_to_move(inputs, tensors_in(result))
    row["bytes"] = moved
    row["dispatches"] = len(prof.dispatches)
    # Timed through C++ dispatch (native_route: as on a Mac, no Python mode)
    # where that runs the kernels the mode ran; else through the mode.
    with native_route():
        with mps_ops.profile() as routed:
            case.call(*inputs)
        torch.cuda.synchronize()
        row["route"] = "native" if [d.kernel for d in routed.dispatches] == [d.kernel for d in prof.dispatches] \
            else "mode"
        if row["route"] == "native":
            time_ours(row, lambda: case.call(*inputs), moved, cycles_per_second)
    if row["route"] == "mode":
        time_ours(row, ours, moved, cycles_per_second)
    baseline = case.baseline or case.call
    if case.baseline:
        row["torch_call"] = "torch's kernels for the same job (gpu_cases.BASELINES)"
    theirs = inputs
    try:
        try:
            expected = baseline(*theirs)
        except RuntimeError:
            if not any(t.device.type == "cpu" for t in inputs):
                raise
            # Some CUDA kernels refuse a CPU scalar operand (gcd): the same
            # job with the 0-dim operand on the GPU.
            theirs = [t.cuda() for t in inputs]
            expected = baseline(*theirs)
        torch.cuda.synchronize()
        row["torch_gbps"] = _gbps(moved, gpu_seconds(lambda: baseline(*theirs), cycles_per_second))
        if row["waits_for_gpu"]:
            # What torch's op costs where it too waits at the call: the same
            # round trip in the same run (the rule still compares with torch's
            # op alone).
            synced = gpu_seconds(lambda: (baseline(*theirs), torch.cuda.synchronize()), cycles_per_second)
            row["torch_synced_gbps"] = _gbps(moved, synced)
            row["ratio_to_synced"] = round(row["ours_gbps"] / row["torch_synced_gbps"], 3)
            if "ours_deferred_gbps" in row:
                row["ratio_deferred"] = round(row["ours_deferred_gbps"] / row["torch_gbps"], 3)
    except (RuntimeError, NotImplementedError) as e:  # torch's CUDA kernel lacks the dtype
        row.update(torch_gbps=None, ratio=None, bound="no-baseline",
                   error=f"torch: {str(e).splitlines()[0][:160]}")
        return row
    if not case.random and not inplace:  # in place: the inputs have moved on
        row["same_result"] = all(
            a.shape == b.shape and torch.allclose(a.double(), b.double(), rtol=1e-2, atol=1e-2, equal_nan=True)
            for a, b in zip(tensors_in(result), tensors_in(expected)))
    row.update(classify(row["ours_gbps"], row["torch_gbps"], copy, case.high_arithmetic))
    # (A sampler's draws have no float64 truth to compare with: their
    # tests check the laws.)
    if row["bound"] == "compute" and case.dtype == torch.float32 and not case.random:
        try:
            row.update(accuracy(case, inputs))
        except (RuntimeError, NotImplementedError) as e:  # the row's figures stand without it
            row["accuracy_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    return row


def time_ours(row: dict, fn, moved: int, cycles_per_second: float) -> None:
    """ours_gbps and waits_for_gpu; for a call that waits, also its GB/s with
    error checks deferred (ours_deferred_gbps) and whether it still waits."""
    row["ours_gbps"] = _gbps(moved, gpu_seconds(fn, cycles_per_second))
    row["waits_for_gpu"] = waits_for_gpu(fn, cycles_per_second)
    if row["waits_for_gpu"]:
        seconds, row["waits_when_deferred"] = deferred_gpu_seconds(fn, cycles_per_second)
        row["ours_deferred_gbps"] = _gbps(moved, seconds)


def classify(ours_gbps: float, torch_gbps: float, copy: float, high_arithmetic: bool) -> dict:
    """The row's ratio, bound and whether it meets its target (module doc)."""
    row = {"ratio": round(ours_gbps / torch_gbps, 3) if torch_gbps else None}
    if torch_gbps >= MEMORY_SHARE * copy:
        row.update(bound="memory", target_met=row["ratio"] >= MEMORY_RATIO)
    elif not high_arithmetic:
        floor = round(min(WEAK_COPY_SHARE * copy, WEAK_TORCH_RATIO * torch_gbps), 1)
        row.update(bound="weak-baseline", floor_gbps=floor, target_met=ours_gbps >= floor)
    else:
        row.update(bound="compute")
    return row


def markdown(report: dict) -> str:
    lines = [f"# mps_ops kernels against torch's CUDA kernels on {report['device']}", "",
             f"torch {report['torch']}; copy {report['copy_gbps']} GB/s. NVIDIA figures standing in for "
             "an Apple GPU's design faults; never Mac figures.", "",
             "| family | kernel | shape | dtype | ours GB/s | torch GB/s | ratio | bound | target |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        target = {True: "met", False: "**below**"}.get(r.get("target_met"), "-")
        if r.get("bound") == "compute" and "ours_max_rel_error" in r:
            target = f"rel. error {r['ours_max_rel_error']:.1e} (torch {r['torch_max_rel_error']:.1e})"
        if r.get("bound") == "compute" and "ours_normwise_error" in r:
            target = f"normwise error {r['ours_normwise_error']:.1e} (torch {r['torch_normwise_error']:.1e})"
        if r.get("ratio_to_synced") is not None:
            target += f" (waits at the call: {r['ratio_to_synced']}x torch + sync"
            if r.get("ratio_deferred") is not None:
                target += f"; checks deferred: {r['ratio_deferred']}x torch"
            target += ")"
        if r.get("error"):
            target = r["error"]
        shape = "x".join(str(s) for s in r["shape"])
        lines.append(f"| {r['family']} | {r['kernel']} | {shape} | {r['dtype']} | {r.get('ours_gbps', '-')} | "
                     f"{r.get('torch_gbps', '-')} | {r.get('ratio', '-')} | {r.get('bound', '-')} | {target} |")
    lines += ["", summary(report)]
    return "\n".join(lines) + "\n"


def summary(report: dict) -> str:
    rows = report["rows"]
    counts = {b: [r for r in rows if r.get("bound") == b] for b in ("memory", "weak-baseline", "compute")}
    met = {b: sum(1 for r in rs if r.get("target_met")) for b, rs in counts.items()}
    ratios = [r["ratio"] for r in counts["memory"]]
    synced = [r["ratio_to_synced"] for r in rows if r.get("ratio_to_synced") is not None]
    deferred = [r["ratio_deferred"] for r in rows if r.get("ratio_deferred") is not None]
    return (f"bench_gpu: {len(rows)} rows; memory {met['memory']}/{len(counts['memory'])} at >= "
            f"{MEMORY_RATIO}x torch (median ratio {statistics.median(ratios) if ratios else '-'}); "
            f"weak-baseline {met['weak-baseline']}/{len(counts['weak-baseline'])} at their floor; "
            f"compute {len(counts['compute'])}; no baseline or error "
            f"{sum(1 for r in rows if r.get('bound') in ('none', 'no-baseline'))}; "
            f"waiting at the call {len(synced)} (min ratio to torch + sync {min(synced) if synced else '-'}; "
            f"checks deferred: min ratio {min(deferred) if deferred else '-'}, "
            f"{sum(1 for r in deferred if r >= MEMORY_RATIO)} at >= {MEMORY_RATIO}x torch)")


def chart(report: dict, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = [r for r in report["rows"] if r.get("ratio")]
    colours = {"memory": "tab:blue", "weak-baseline": "tab:orange", "compute": "tab:gray"}
    fig, ax = plt.subplots(figsize=(10, max(4, 0.16 * len(rows))))
    labels = [f"{r['kernel']} {r['family']} {r['dtype']}" for r in rows]
    ax.barh(range(len(rows)), [r["ratio"] for r in rows], color=[colours.get(r["bound"], "k") for r in rows])
    ax.axvline(MEMORY_RATIO, color="red", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(rows)), labels, fontsize=5)
    ax.invert_yaxis()
    ax.set_xlabel("ours / torch CUDA (GB/s ratio); dashed: the 0.8x target of memory rows")
    ax.set_title(f"mps_ops vs torch CUDA on {report['device']} (blue memory, orange weak-baseline, grey compute)",
                 fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    return True


def write(report: dict, json_path: Path) -> None:
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report, indent=1))
    json_path.with_suffix(".md").write_text(markdown(report))
    drawn = chart(report, json_path.with_suffix(".png"))
    print(summary(report) + ("" if drawn else " (no matplotlib: no chart)"))


def profile(cases, dtypes=None) -> None:
    """One call of ours and one of torch's per case between cudaProfilerStart
    and Stop, after a warm-up call of each: what `ncu --profile-from-start off`
    profiles (tools/gpu_check.sh --profile). No timing."""
    from mps_ops.testing import emulate

    for case in cases:
        if dtypes and str(case.dtype).replace("torch.", "") not in dtypes:
            continue
        inputs = case.make()
        baseline = case.baseline or case.call

        def ours():
            with emulate():
                case.call(*inputs)

        try:
            ours(), baseline(*inputs)
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            ours(), baseline(*inputs)
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            print(f"profiled {case.family} {case.kernel} {case.dtype}", flush=True)
        except Exception as e:  # the next case still runs
            print(f"not profiled {case.family} {case.kernel} {case.dtype}: {type(e).__name__}: {e}", flush=True)
        del inputs
        torch.cuda.empty_cache()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here (and .md, .png beside it)")
    parser.add_argument("--from-json", type=Path, help="redraw the table and chart of an earlier run")
    parser.add_argument("--families", help="comma-separated families or kernels (substrings of the family)")
    parser.add_argument("--deadline", type=float, default=0, help="start no case after this many seconds")
    parser.add_argument("--profile", action="store_true",
                        help="one call each of ours and torch's per case, for ncu --profile-from-start off")
    parser.add_argument("--dtypes", help="comma-separated dtypes (float32,float16,...): only these (with --profile)")
    args = parser.parse_args(argv)
    if args.from_json:
        write(json.loads(args.from_json.read_text()), args.from_json)
        return 0
    import mps_ops

    if mps_ops.backend != "cuda" or not torch.cuda.is_available():
        print(f"bench_gpu: needs the CUDA backend and a GPU (backend {mps_ops.backend!r}); nothing measured")
        return 2
    # The overrides' kernels too, against torch's CUDA kernels for the same op.
    mps_ops.enable_overrides()
    from gpu_cases import all_cases

    if args.profile:
        profile(all_cases(args.families.split(",") if args.families else None),
                args.dtypes.split(",") if args.dtypes else None)
        return 0
    if not args.json:
        parser.error("--json is required")

    started = time.monotonic()
    cycles = _sleep_cycles_per_second()
    copy = copy_gbps(cycles)
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "copy_gbps": round(copy, 1),
              "rows": [], "not_reached": []}
    cases = all_cases(args.families.split(",") if args.families else None)
    for i, case in enumerate(cases):
        label = f"{case.family} {case.kernel} {case.dtype}"
        if args.deadline and time.monotonic() - started > args.deadline:
            report["not_reached"].append(label)
            continue
        try:
            row = measure(case, cycles, copy)
        except Exception as e:  # recorded; the run goes on
            row = {"family": case.family, "kernel": case.kernel, "shape": list(case.shape),
                   "dtype": str(case.dtype).replace("torch.", ""), "bound": "none",
                   "error": f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"}
        report["rows"].append(row)
        print(f"[{i + 1}/{len(cases)}] {label}: ours {row.get('ours_gbps')} torch {row.get('torch_gbps')} "
              f"ratio {row.get('ratio')} {row.get('bound')} {row.get('error', '')}", flush=True)
        torch.cuda.empty_cache()
    report["seconds"] = round(time.monotonic() - started, 1)
    write(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
