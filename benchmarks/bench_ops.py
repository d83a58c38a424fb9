"""Every registry op: our Metal kernels against the stock path, and the work figures.

    python benchmarks/bench_ops.py            # timings (a Mac with the Metal backend)
    python benchmarks/bench_ops.py --work     # work figures, any backend
    python benchmarks/bench_ops.py --ops heaviside,frexp --sizes 1e3,1e6 --out results/
    python benchmarks/bench_ops.py --memory 100  # overrides: driver memory over 100 shapes (a Mac)
    python benchmarks/bench_ops.py --error-checks deferred  # flagged ops without their wait (a Mac)

Timings (Mac only). For each op, layout (dense, transposed, strided ``[:, ::2]``,
scalar-broadcast), dtype (float32 / float16 / bfloat16, where the op supports
it; an integer-only op: its operand makers' dtype, mps_ops.samples)
and size (1e3 to 1e7 elements): our kernel on ``mps`` tensors against
the stock path in the same run. The stock path of a ``fill`` op (torch has no
MPS kernel) is the CPU-fallback round trip a user gets today with
PYTORCH_ENABLE_MPS_FALLBACK=1: inputs ``.cpu()``, the CPU op, the results
``.to("mps")``; that of an ``override`` op is torch's own MPS kernel
(MPSGraph), timed with the override disabled, then ours with it enabled, in
one process. ``--memory N``: per override op, the driver memory
(``torch.mps.driver_allocated_memory()``) left after N calls on distinct
shapes, stock against ours (benchmarks/override_memory.py). torch.utils.benchmark's ``blocked_autorange``
times each statement, ``torch.mps.synchronize()`` included, after a warm-up
call. Written to --out: a Compare table (bench_ops.txt), bench_ops.json,
bench_ops.md (with achieved GB/s against the chip's nominal bandwidth) and,
with matplotlib, bench_ops_speedup.png.

Scalar-broadcast means: for a binary op, the second operand is a 0-dim CPU
tensor (bound as a value); for a unary op, the input is one element expanded
to the full shape (stride 0).

Work figures (``--work``, any backend; also printed where timing is not
possible): per op, call form and layout, the dispatches of one call and the
operand bytes they bind against the bytes the call must move (inputs read
once, outputs written once); see mps_ops/profiling.py for the definitions.
Contiguous and transposed layouts of an element-wise op must take one
dispatch, stay within 1.05x and run no aten copy; the ``check`` column says
so, and the script exits 1 if one does not.

``--error-checks deferred`` times every op with mps_ops.set_error_checks("deferred"): the ops
that read a flag back for bad input (nll_loss, cross_entropy's backward, take, put_, ...) then
do not wait for the GPU at the call; the environment in bench_ops.json records the mode.

Without a Mac no timing is measured and none is printed: this script never
prints invented numbers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's mps_ops, not another installed copy
sys.path.insert(0, str(HERE))  # the benchmark modules beside this script

import torch  # noqa: E402

import mps_ops  # noqa: E402

from op_inputs import OPS  # noqa: E402,F401  (the ops measured, for callers)
from timing import DEFAULT_SIZES, LAYOUTS, can_time, time_all  # noqa: E402
from work_report import print_work, work_rows  # noqa: E402
from report import write_outputs  # noqa: E402
from override_memory import memory_rows, write_memory  # noqa: E402

# Files by role: op_inputs.py (each op's call and inputs per layout),
# work_report.py (the work table), timing.py (the Mac timing harness),
# chips.py (nominal bandwidth by chip), report.py (the files written to --out).


def _parse_sizes(text: str) -> tuple:
    return tuple(int(float(s)) for s in text.split(",") if s)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", action="store_true", help="work figures only (any backend)")
    parser.add_argument("--ops", type=lambda s: [x for x in s.split(",") if x], default=None)
    parser.add_argument("--dtypes", type=lambda s: [getattr(torch, x) for x in s.split(",") if x],
                        default=None)
    parser.add_argument("--layouts", type=lambda s: [x for x in s.split(",") if x],
                        default=list(LAYOUTS))
    parser.add_argument("--sizes", type=_parse_sizes, default=DEFAULT_SIZES)
    parser.add_argument("--min-run-time", type=float, default=0.2, help="seconds per statement")
    parser.add_argument("--bandwidth", type=float, default=None,
                        help="nominal GB/s of this chip (default: looked up by chip name)")
    parser.add_argument("--out", default="bench_ops_results", help="directory for the outputs")
    parser.add_argument("--memory", type=int, default=0, metavar="N",
                        help="driver memory growth over N distinct shapes per override op, stock vs ours")
    parser.add_argument("--error-checks", choices=("at_call", "deferred"), default="at_call",
                        help="when flagged ops raise for bad input (mps_ops.set_error_checks)")
    opts = parser.parse_args(argv)
    if opts.ops:
        # Registry entries only: a key naming another entry's overload (its
        # `record`) is bench_gpu's alone, and timing.py would measure nothing.
        entries = [name for name, spec in OPS.items() if not spec.record]
        unknown = set(opts.ops) - set(entries)
        if unknown:
            parser.error(f"unknown ops {sorted(unknown)}; known: {', '.join(entries)}")
    unknown = set(opts.layouts) - set(LAYOUTS)
    if unknown:
        parser.error(f"unknown layouts {sorted(unknown)}; known: {', '.join(LAYOUTS)}")

    # Ours for every op, the overrides' too (timing toggles each around its cases).
    mps_ops.enable_overrides()
    mps_ops.set_error_checks(opts.error_checks)
    if opts.work:
        return print_work(work_rows(names=opts.ops))
    ok, why = can_time()
    if not ok:
        print(f"bench_ops: timing needs a Mac with the Metal backend ({why}). "
              "No timings were measured and none are printed.")
        print("The work figures, which need no GPU, follow.\n")
        print_work(work_rows(names=opts.ops))
        return 0
    if opts.memory:
        print(write_memory(memory_rows(opts, opts.memory), opts.out))
        return 0
    work_table = work_rows(names=opts.ops)
    results, rows = time_all(opts)
    write_outputs(opts, results, rows, work_table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
