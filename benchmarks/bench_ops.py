"""Every registry op: our Metal kernels against the stock path, and the work figures.

    python benchmarks/bench_ops.py            # timings (a Mac with the Metal backend)
    python benchmarks/bench_ops.py --work     # work figures, any backend
    python benchmarks/bench_ops.py --ops heaviside,frexp --sizes 1e3,1e6 --out results/

Timings (Mac only). For each op, layout (dense, transposed, strided ``[:, ::2]``,
scalar-broadcast), dtype (float32 / float16 / bfloat16, where the op supports
it) and size (1e3 to 1e7 elements): our kernel on ``mps`` tensors against
the stock path in the same run. The stock path of a ``fill`` op (torch has no
MPS kernel) is the CPU-fallback round trip a user gets today with
PYTORCH_ENABLE_MPS_FALLBACK=1: inputs ``.cpu()``, the CPU op, the results
``.to("mps")``; that of an ``override`` op is torch's own MPS kernel, timed
before ``enable_overrides()``. torch.utils.benchmark's ``blocked_autorange``
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

Without a Mac no timing is measured and none is printed: this script never
prints invented numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's mps_ops, not another installed copy

import torch  # noqa: E402

import mps_ops  # noqa: E402
from mps_ops.profiling import bytes_to_move, measure_work  # noqa: E402
from mps_ops.testing import device  # noqa: E402

WORK_LIMIT = 1.05
TIMING_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
DEFAULT_SIZES = (10**3, 10**4, 10**5, 10**6, 10**7)
LAYOUTS = ("dense", "transposed", "strided", "scalar_broadcast")


# --- the ops -----------------------------------------------------------------


@dataclass(frozen=True)
class OpSpec:
    fn: object  # the public call
    makers: tuple  # one per tensor input: (shape, dtype) -> CPU tensor
    kind: str = "elementwise"
    inplace: object = None  # the in-place method, if the op has one
    inputs: object = None  # (layout, rows, cols, dtype) -> CPU tensors, replacing makers


def _float(make):
    return lambda shape, dtype: make(shape).to(dtype)


def _take_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """take(self, index): self and index of shape (rows, cols) in the given layout
    (scalar-broadcast: one index expanded); indices span [-numel, numel)."""
    n = rows * cols

    def index(shape):
        return torch.randint(-n, n, shape)

    if layout == "dense":
        return [torch.randn(rows, cols).to(dtype), index((rows, cols))]
    if layout == "transposed":
        return [torch.randn(cols, rows).to(dtype).t(), index((cols, rows)).t()]
    if layout == "strided":
        return [torch.randn(rows, 2 * cols).to(dtype)[:, ::2], index((rows, cols))]
    if layout == "scalar_broadcast":
        return [torch.randn(rows, cols).to(dtype), index((1, 1)).expand(rows, cols)]
    raise ValueError(layout)


def _reduction_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """One (rows, cols) input in the given layout (scalar-broadcast: one
    value expanded), reduced by the spec's fn."""
    if layout == "dense":
        return [torch.randn(rows, cols).to(dtype)]
    if layout == "transposed":
        return [torch.randn(cols, rows).to(dtype).t()]
    if layout == "strided":
        return [torch.randn(rows, 2 * cols).to(dtype)[:, ::2]]
    if layout == "scalar_broadcast":
        return [torch.randn(1, 1).to(dtype).expand(rows, cols)]
    raise ValueError(layout)


def _view_copy_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """A (2, rows, cols) input: channel_shuffle shuffles its rows as channels,
    narrow_copy takes half of them."""
    if layout == "dense":
        return [torch.randn(2, rows, cols).to(dtype)]
    if layout == "transposed":
        return [torch.randn(2, cols, rows).to(dtype).transpose(1, 2)]
    if layout == "strided":
        return [torch.randn(2, rows, 2 * cols).to(dtype)[:, :, ::2]]
    raise ValueError(layout)


def _pool_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """A (2, 3, rows, cols, 4) volume, pooled to half its spatial size."""
    if layout == "dense":
        return [torch.randn(2, 3, rows, cols, 4).to(dtype)]
    if layout == "transposed":
        return [torch.randn(2, 3, cols, rows, 4).to(dtype).transpose(2, 3)]
    if layout == "strided":
        return [torch.randn(2, 3, rows, 2 * cols, 4).to(dtype)[:, :, :, ::2]]
    raise ValueError(layout)


def _half_size(x):
    return tuple(max(1, s // 2) for s in x.shape[-3:])


def _loss_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """(rows, cols) scores in the given layout and rows of class targets:
    one class each (multi_margin) or a list ended by -1 (multilabel)."""
    scores = _reduction_inputs(layout, rows, cols, dtype)[0]
    labels = torch.randint(0, cols, (rows, cols))
    labels[:, cols // 2] = -1
    return [scores, labels]


def _multilabel_backward(x, y):
    loss, is_target = torch.ops.aten.multilabel_margin_loss_forward(x, y, 1)
    return torch.ops.aten.multilabel_margin_loss_backward(torch.ones((), device=x.device), x, y, 1,
                                                         is_target)


def _adagrad_step(param):
    """One fused Adagrad step on one parameter tensor."""
    grad, state_sum = torch.ones_like(param), torch.zeros_like(param)
    step = torch.ones((), device=param.device)
    torch._fused_adagrad_([param], [grad], [state_sum], [step], lr=0.01, lr_decay=0.0,
                          weight_decay=0.0, eps=1e-10, maximize=False)
    return param


def _into_new_out(fn, **kwargs):
    """fn's out= overload (the one ours fills) with a fresh output."""
    return lambda x: fn(x, out=torch.empty(0, dtype=x.dtype, device=x.device), **kwargs)


# Inputs chosen inside each function's domain (as in test/test_layouts.py).
OPS = {
    "special_ndtri": OpSpec(torch.special.ndtri, (_float(lambda s: torch.rand(s)),)),
    "special_log_ndtr": OpSpec(torch.special.log_ndtr, (_float(lambda s: torch.randn(s) * 5),)),
    "special_airy_ai": OpSpec(torch.special.airy_ai, (_float(lambda s: torch.randn(s) * 4),)),
    "special_erfcx": OpSpec(torch.special.erfcx, (_float(lambda s: torch.randn(s) * 4),)),
    "special_laguerre_polynomial_l": OpSpec(
        torch.special.laguerre_polynomial_l,
        (_float(lambda s: torch.rand(s) * 4), _float(lambda s: torch.randint(0, 8, s)))),
    "special_legendre_polynomial_p": OpSpec(
        torch.special.legendre_polynomial_p,
        (_float(lambda s: torch.rand(s) * 2 - 1), _float(lambda s: torch.randint(0, 8, s)))),
    "heaviside": OpSpec(
        torch.heaviside,
        (_float(lambda s: torch.randint(-1, 2, s)), _float(lambda s: torch.rand(s))),
        inplace=torch.Tensor.heaviside_),
    "frexp": OpSpec(torch.frexp, (_float(lambda s: torch.randn(s) * 100),)),
    "_add_relu": OpSpec(
        torch._add_relu, (_float(lambda s: torch.randn(s)), _float(lambda s: torch.randn(s))),
        inplace=torch.ops.aten._add_relu_.Tensor),
    "take": OpSpec(torch.take, (), kind="gather", inputs=_take_inputs),
    "put_": OpSpec(lambda x, i: x.put_(i, torch.ones(i.shape, dtype=x.dtype, device=x.device), accumulate=True),
                   (), kind="scatter", inputs=_take_inputs),
    "max": OpSpec(_into_new_out(torch.max), (), kind="reduction", inputs=_reduction_inputs),
    "min": OpSpec(_into_new_out(torch.min), (), kind="reduction", inputs=_reduction_inputs),
    "_aminmax": OpSpec(lambda x: torch._aminmax(x, -1), (), kind="reduction",
                       inputs=_reduction_inputs),
    "batch_norm_update_stats": OpSpec(
        lambda x: torch.batch_norm_update_stats(x, None, None, 0.1), (), kind="reduction",
        inputs=_reduction_inputs),
    "logit_": OpSpec(torch.logit, (_float(lambda s: torch.rand(s)),), kind="inplace_only",
                     inplace=lambda x: x.logit_(1e-6)),
    "channel_shuffle": OpSpec(lambda x: torch.nn.functional.channel_shuffle(x, 2) if x.size(1) % 2 == 0
                              else torch.nn.functional.channel_shuffle(x, 1), (), kind="view_copy",
                              inputs=_view_copy_inputs),
    "narrow_copy": OpSpec(_into_new_out(lambda x, out: torch.narrow_copy(x, 1, 0, x.size(1) // 2, out=out)),
                          (), kind="view_copy", inputs=_view_copy_inputs),
    "_adaptive_avg_pool3d": OpSpec(lambda x: torch.nn.functional.adaptive_avg_pool3d(x, _half_size(x)),
                                   (), kind="pool", inputs=_pool_inputs),
    "adaptive_max_pool3d": OpSpec(lambda x: torch.nn.functional.adaptive_max_pool3d(x, _half_size(x)),
                                  (), kind="pool", inputs=_pool_inputs),
    "_pdist_forward": OpSpec(torch.pdist, (), kind="reduction", inputs=_reduction_inputs),
    "_pdist_backward": OpSpec(lambda x: torch.ops.aten._pdist_backward(
        torch.ones(x.size(0) * (x.size(0) - 1) // 2, device=x.device), x.contiguous(), 2.0,
        torch.pdist(x)), (), kind="reduction", inputs=_reduction_inputs),
    "multi_margin_loss": OpSpec(lambda x, y: torch.nn.functional.multi_margin_loss(x, y[:, 0]), (),
                                kind="loss", inputs=_loss_inputs),
    "multilabel_margin_loss_forward": OpSpec(torch.nn.functional.multilabel_margin_loss, (),
                                             kind="loss", inputs=_loss_inputs),
    "multilabel_margin_loss_backward": OpSpec(_multilabel_backward, (), kind="loss",
                                              inputs=_loss_inputs),
    "mode": OpSpec(lambda x: torch.mode(x.round(), -1), (), kind="reduction", inputs=_reduction_inputs),
    "embedding_renorm_": OpSpec(
        lambda w, i: torch.embedding_renorm_(w, i, 1.0, 2.0), (), kind="loss",
        inputs=lambda layout, rows, cols, dtype: [_reduction_inputs(layout, rows, cols, dtype)[0] * 3,
                                                  torch.randint(0, rows, (2 * rows,))]),
    "_fused_adagrad_": OpSpec(_adagrad_step, (), kind="optimizer",
                              inputs=lambda layout, rows, cols, dtype: [torch.randn(rows, cols).to(dtype)]),
    # dim 1: the rows (24 by default) halve evenly.
    "glu_jvp": OpSpec(lambda x: torch.ops.aten.glu_jvp(torch.nn.functional.glu(x, 1), x, x, 1), (),
                      kind="view_copy", inputs=_view_copy_inputs),
    "glu_backward_jvp": OpSpec(
        lambda x: torch.ops.aten.glu_backward_jvp(x, torch.nn.functional.glu(x, 1), x,
                                                  torch.nn.functional.glu(x, 1), x, 1), (),
        kind="view_copy", inputs=_view_copy_inputs),
    "_masked_softmax": OpSpec(lambda x: torch.ops.aten._masked_softmax(x, x > 1.0, -1, None), (),
                              kind="reduction", inputs=_reduction_inputs),
    "_masked_softmax_backward": OpSpec(
        lambda x: torch.ops.aten._masked_softmax_backward(x, x, x > 1.0, -1), (), kind="reduction",
        inputs=_reduction_inputs),
    "segment_reduce": OpSpec(
        lambda x: torch.segment_reduce(x, "sum", lengths=torch.full((x.size(0),), 1, device=x.device)),
        (), kind="reduction", inputs=_reduction_inputs),
    "_segment_reduce_backward": OpSpec(
        lambda x: torch.ops.aten._segment_reduce_backward(
            x, x, x, "sum", lengths=torch.full((x.size(0),), 1, device=x.device)),
        (), kind="reduction", inputs=_reduction_inputs),
    "fractional_max_pool2d": OpSpec(
        lambda x: torch.nn.functional.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5)), (), kind="pool",
        inputs=lambda layout, rows, cols, dtype: [t.flatten(0, 1) for t in _pool_inputs(layout, rows, cols, dtype)]),
    "fractional_max_pool3d": OpSpec(
        lambda x: torch.nn.functional.fractional_max_pool3d(x, 2, output_ratio=(0.5, 0.5, 0.5)), (),
        kind="pool", inputs=_pool_inputs),
    "_upsample_lanczos2d_aa": OpSpec(
        lambda x: torch.ops.aten._upsample_lanczos2d_aa(x, (x.size(2) // 2 + 1, 2 * x.size(3)), False), (), kind="pool",
        inputs=lambda layout, rows, cols, dtype: [t.flatten(0, 1) for t in _pool_inputs(layout, rows, cols, dtype)]),
    "rrelu_with_noise": OpSpec(
        lambda x: torch.ops.aten.rrelu_with_noise(x, torch.empty(x.shape, dtype=x.dtype, device=x.device), 0.1, 0.3,
                                                  True), (), kind="activation", inputs=_reduction_inputs),
    "logspace": OpSpec(lambda out: torch.logspace(-3.0, 3.0, out.numel(), 10.0, out=out), (), kind="factory",
                       inputs=lambda layout, rows, cols, dtype: [torch.empty(rows * cols, dtype=dtype)]),
    "var": OpSpec(_into_new_out(torch.var, dim=-1), (), kind="reduction", inputs=_reduction_inputs),
    "std": OpSpec(_into_new_out(torch.std, dim=-1), (), kind="reduction", inputs=_reduction_inputs),
}


def registry_ops() -> dict:
    """short name -> OpRecord, in registry order."""
    return {r.name.split("::", 1)[1]: r for r in mps_ops.ops()}


def check_coverage() -> None:
    missing = set(registry_ops()) - set(OPS)
    if missing:
        raise SystemExit(f"bench_ops: no samples for registry ops {sorted(missing)}: add them to OPS")


def layout_inputs(spec: OpSpec, layout: str, rows: int, cols: int, dtype) -> list:
    """CPU tensors for one layout; the result has shape (rows, cols)."""
    if spec.inputs is not None:
        return spec.inputs(layout, rows, cols, dtype)
    makers = spec.makers
    if layout == "dense":
        return [m((rows, cols), dtype) for m in makers]
    if layout == "transposed":
        return [m((cols, rows), dtype).t() for m in makers]
    if layout == "transposed_lhs":  # binary: one transposed, one contiguous operand
        return [makers[0]((cols, rows), dtype).t(), makers[1]((rows, cols), dtype)]
    if layout == "strided":
        return [makers[0]((rows, 2 * cols), dtype)[:, ::2], *(m((rows, cols), dtype) for m in makers[1:])]
    if layout == "scalar_broadcast":
        if len(makers) == 1:
            return [makers[0]((1, 1), dtype).expand(rows, cols)]
        return [makers[0]((rows, cols), dtype), makers[1]((), dtype)]
    if layout == "broadcast":  # binary: (rows, 1) with (1, cols)
        return [makers[0]((rows, 1), dtype), makers[1]((1, cols), dtype)]
    if layout == "zero_dim":
        return [m((), dtype) for m in makers]
    raise ValueError(layout)


def to_device(tensors: list, target: str) -> list:
    """Moves operands to the device, keeping views' layouts; a 0-dim second
    operand of a binary op stays on the CPU (a CPU scalar)."""
    out = []
    for i, t in enumerate(tensors):
        if t.dim() == 0 and i > 0:
            out.append(t)
            continue
        base = t._base if t._base is not None else t
        moved = base.to(target)
        out.append(moved.as_strided(t.shape, t.stride(), t.storage_offset()))
    return out


# --- work figures ------------------------------------------------------------

# (call form, layout, asserted?) rows of the work table.
WORK_ROWS_UNARY = [
    ("fn", "dense", True), ("fn", "transposed", True), ("out=", "dense", True),
    ("out=", "transposed", True), ("fn", "strided", False), ("fn", "scalar_broadcast", False),
    ("fn", "zero_dim", False),
]
WORK_ROWS_BINARY = [
    ("fn", "dense", True), ("fn", "transposed", True), ("fn", "transposed_lhs", True),
    ("out=", "dense", True), ("out=", "transposed", True), ("inplace", "dense", True),
    ("inplace", "transposed", True), ("fn", "strided", False), ("fn", "scalar_broadcast", False),
    ("fn", "broadcast", False), ("fn", "zero_dim", False),
]
WORK_ROWS_GATHER = [
    ("fn", "dense", False), ("fn", "transposed", False), ("out=", "dense", False),
    ("fn", "strided", False), ("fn", "scalar_broadcast", False),
]
WORK_ROWS_REDUCTION = [
    ("fn", "dense", False), ("fn", "transposed", False), ("fn", "strided", False),
    ("fn", "scalar_broadcast", False),
]
WORK_ROWS_INPLACE_ONLY = [("inplace", "dense", True), ("inplace", "transposed", True),
                          ("inplace", "strided", False)]
WORK_ROWS_VIEW_COPY = [("fn", "dense", False), ("fn", "transposed", False), ("fn", "strided", False)]
WORK_ROWS_DENSE_ONLY = [("fn", "dense", False)]  # optimizer state, factory outputs: contiguous
WORK_NOTES = {
    "strided": "span: [:, ::2] binds first..last element, ~2x its elements",
    "scalar_broadcast": "",
    "broadcast": "",
    "zero_dim": "",
}


def _call_form(spec: OpSpec, form: str, inputs: list, target: str):
    """(callable, args, kwargs) for one call form."""
    if form == "fn":
        return spec.fn, inputs, {}
    if form == "inplace":
        return spec.inplace, inputs, {}
    if form == "out=":  # contiguous outputs of the right shape and dtype, as users make them
        reference = spec.fn(*[t.cpu() for t in inputs])
        if isinstance(reference, tuple):
            out = tuple(torch.empty(r.shape, dtype=r.dtype, device=target) for r in reference)
        else:
            out = torch.empty(reference.shape, dtype=reference.dtype, device=target)
        return spec.fn, inputs, {"out": out}
    raise ValueError(form)


def work_rows(rows: int = 24, cols: int = 37, names=None) -> list:
    """One dict per (op, call form, layout): the figures of the work table."""
    check_coverage()
    target = device()
    table = []
    for name, record in registry_ops().items():
        if names and name not in names:
            continue
        spec = OPS[name]
        if spec.kind == "gather":
            plan = WORK_ROWS_GATHER
        elif spec.kind == "reduction":
            plan = WORK_ROWS_REDUCTION
        elif spec.kind == "inplace_only":
            plan = WORK_ROWS_INPLACE_ONLY
        elif spec.kind in ("optimizer", "factory"):
            plan = WORK_ROWS_DENSE_ONLY
        elif spec.kind in ("view_copy", "pool", "loss", "scatter", "activation"):
            plan = WORK_ROWS_VIEW_COPY
        else:
            plan = WORK_ROWS_BINARY if len(spec.makers) == 2 else WORK_ROWS_UNARY
        for form, layout, asserted in plan:
            if form == "inplace" and spec.inplace is None:
                continue
            row = {"op": name, "call": form, "layout": layout, "asserted": asserted}
            if not record.active:
                row.update(kernels="(not registered: torch has an MPS kernel)", check="-")
                table.append(row)
                continue
            torch.manual_seed(0)
            inputs = to_device(layout_inputs(spec, layout, rows, cols, torch.float32), target)
            fn, args, kwargs = _call_form(spec, form, inputs, target)
            _, work = measure_work(fn, *args, **kwargs)
            ok = len(work.dispatches) == 1 and work.ratio <= WORK_LIMIT and not work.copies
            row.update(
                kernels=",".join(sorted(set(work.variants))) or "-",
                dispatches=len(work.dispatches), bytes_bound=work.bytes_bound,
                bytes_to_move=work.bytes_to_move, ratio=work.ratio,
                metadata_bytes=work.metadata_bytes, copies=len(work.copies),
                check=("ok" if ok else "FAIL") if asserted else "-",
                note=WORK_NOTES.get(layout, "") if spec.kind in ("elementwise", "inplace_only") else
                spec.kind + (": " + ",".join(work.copies) if work.copies else ""),
            )
            table.append(row)
    return table


def format_work(table: list, markdown: bool = False) -> str:
    header = ["op", "call", "layout", "kernel", "disp", "bytes bound", "to move", "ratio",
              "inline meta", "copies", "check", "note"]
    body = []
    for r in table:
        if "dispatches" not in r:
            body.append([r["op"], r["call"], r["layout"], r["kernels"], "", "", "", "", "", "", "-", ""])
            continue
        body.append([r["op"], r["call"], r["layout"], r["kernels"], str(r["dispatches"]),
                     f"{r['bytes_bound']:,}", f"{r['bytes_to_move']:,}", f"{r['ratio']:.3f}",
                     f"{r['metadata_bytes']:,}", str(r["copies"]), r["check"], r["note"]])
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in body]
        return "\n".join(lines)
    widths = [max(len(x) for x in col) for col in zip(header, *body)]
    right = {4, 5, 6, 7, 8, 9}

    def fmt(row):
        return "  ".join(v.rjust(w) if i in right else v.ljust(w)
                         for i, (v, w) in enumerate(zip(row, widths))).rstrip()

    return "\n".join([fmt(header), "  ".join("-" * w for w in widths), *map(fmt, body)])


WORK_LEGEND = f"""\
bytes bound: operand slots of the dispatches (tensor buffers, from the first to one past
  the last byte each view reaches; a 0-dim CPU operand bound inline counts its itemsize).
inline meta: the strided variant's sizes/strides/ndim (take: also numel), bound with
  setBytes; not counted as bound.
to move: inputs read once (distinct elements: a stride-0 dimension counts once; a 0-dim
  CPU scalar counts its itemsize) + outputs written once (numel * itemsize). An in-place
  call's self is read and written, so it counts on both sides.
check: contiguous and transposed layouts must take 1 dispatch, bind <= {WORK_LIMIT}x what
  they must move and run no aten copy ("-": reported, not asserted).
strided [:, ::2]: the buffer bound spans first..last element reached, about twice the
  elements; the kernel touches only the elements, but at cache-line granularity (64+ bytes,
  here holding several elements each) the memory traffic is close to the span, so ~1.5x
  for a unary op is the real cost of that layout, not a hidden copy.
copies: outermost aten copy ops inside the call (a .contiguous() counts once).
emulator: a 0-dim (or 1-element, or fully expanded) CPU input is a CPU scalar to
  TensorIterator and binds inline as a value; on a Mac such an mps tensor is a buffer.
  Same bytes either way.
gather (take): binds all of self and reads index.numel() elements of it, so "to move"
  (all inputs once) is an upper bound there; a non-contiguous index is made contiguous
  first (a copy, and the copy is what gets bound)."""


def print_work(table: list) -> int:
    print(f"work figures ({mps_ops.backend} backend), float32, result shape 24x37:")
    print(format_work(table))
    print()
    print(WORK_LEGEND)
    failed = [r for r in table if r.get("check") == "FAIL"]
    if failed:
        print(f"\n{len(failed)} row(s) FAIL the element-wise work check")
        return 1
    return 0


# --- timing (Mac) ------------------------------------------------------------


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


# Apple's published unified-memory bandwidth, GB/s, by chip (and GPU cores where
# Apple's figure depends on the bin). Looked up for this script from coverage
# of Apple's spec pages and announcements, not read off apple.com here: check
# against Apple's tech specs before quoting. Apple published no figure for the
# base M1; 68.25 is the LPDDR4X-4266 x 128-bit arithmetic, not Apple's number.
NOMINAL_BANDWIDTH_GBPS = {
    "M1": [(0, 68.25, "not published by Apple; LPDDR4X-4266 x 128-bit")],
    "M1 Pro": [(0, 200, "")],
    "M1 Max": [(0, 400, "")],
    "M1 Ultra": [(0, 800, "")],
    "M2": [(0, 100, "")],
    "M2 Pro": [(0, 200, "")],
    "M2 Max": [(0, 400, "")],
    "M2 Ultra": [(0, 800, "")],
    "M3": [(0, 100, "")],
    "M3 Pro": [(0, 150, "")],
    "M3 Max": [(0, 300, "30-core GPU"), (40, 400, "40-core GPU")],
    "M3 Ultra": [(0, 819, "")],
    "M4": [(0, 120, "")],
    "M4 Pro": [(0, 273, "")],
    "M4 Max": [(0, 410, "32-core GPU"), (40, 546, "40-core GPU")],
}


def bandwidth_table_markdown() -> str:
    lines = ["| chip | nominal GB/s | note |", "|---|---|---|"]
    for chip, bins in NOMINAL_BANDWIDTH_GBPS.items():
        for _, gbps, note in bins:
            lines.append(f"| {chip} | {gbps:g} | {note} |")
    return "\n".join(lines)


def detect_chip() -> tuple:
    """(chip name like "M2 Pro" or None, GPU core count or None)."""
    if platform.system() != "Darwin":
        return None, None
    try:
        brand = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True,
                               text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None, None
    chip = brand.replace("Apple ", "").strip() or None
    cores = None
    try:
        info = subprocess.run(["system_profiler", "SPDisplaysDataType"], capture_output=True,
                              text=True, timeout=30).stdout
        for line in info.splitlines():
            if "Total Number of Cores" in line:
                cores = int(line.split(":")[1])
                break
    except (OSError, subprocess.SubprocessError, ValueError):
        pass
    return chip, cores


def nominal_bandwidth(chip, gpu_cores):
    bins = NOMINAL_BANDWIDTH_GBPS.get(chip or "")
    if not bins:
        return None
    chosen = bins[0]
    for entry in bins:
        if gpu_cores is not None and gpu_cores >= entry[0]:
            chosen = entry
    if gpu_cores is None and len(bins) > 1:
        chosen = bins[-1]  # unknown bin: the higher figure, so the percentage is not flattering
    return chosen[1]


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


def time_all(opts) -> tuple:
    """Times every case; returns (Measurements for Compare, one row dict per case).

    fill ops: ours and the CPU-fallback round trip, case by case. override
    ops: every stock case first (torch's MPS kernel), then enable_overrides()
    (which cannot be undone in a process) and every case of ours."""
    cases = []
    for name, record in registry_ops().items():
        if opts.ops and name not in opts.ops:
            continue
        dtypes = [d for d in TIMING_DTYPES
                  if d in record.dtypes and (not opts.dtypes or d in opts.dtypes)]
        for layout in opts.layouts:
            for dtype in dtypes:
                for n in opts.sizes:
                    cases.append((name, record, layout, dtype, n))
    fill = [c for c in cases if c[1].policy != "override"]
    override = [c for c in cases if c[1].policy == "override"]
    progress = Progress(len(fill) + 2 * len(override))
    results, rows, pending = [], [], []

    def prepare(name, record, layout, dtype, n):
        rows_, cols = shape_for(n)
        torch.manual_seed(0)
        args = to_device(layout_inputs(OPS[name], layout, rows_, cols, dtype), "mps")
        env = {"fn": OPS[name].fn, "args": args, "sync": torch.mps.synchronize,
               "to_mps": _to_mps, "cpu_args": _cpu_args}
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
    for case in fill:
        name, record, layout, dtype, n = case
        progress.step(f"{name} {layout} {str(dtype)[6:]} {n:.0e}")
        env, row = prepare(*case)
        if not record.active:
            row["note"] = "torch has its own MPS kernel: ours is not registered"
            rows.append(row)
            continue
        stock = _measure(_timer(fallback, env, name, layout, dtype, n, "cpu fallback"), fallback,
                         env, opts.min_run_time)
        ours = _measure(_timer(OURS_STMT, env, name, layout, dtype, n, "mps_ops"), OURS_STMT, env,
                        opts.min_run_time)
        finish(env, row, ours, stock, "cpu fallback")
    for case in override:
        name, _, layout, dtype, n = case
        progress.step(f"stock {name} {layout} {str(dtype)[6:]} {n:.0e}")
        env, row = prepare(*case)
        stock = _measure(_timer(OURS_STMT, env, name, layout, dtype, n, "stock mps"), OURS_STMT,
                         env, opts.min_run_time)
        pending.append((case, env, row, stock))
    if override:
        mps_ops.enable_overrides()
    for (name, _, layout, dtype, n), env, row, stock in pending:
        progress.step(f"{name} {layout} {str(dtype)[6:]} {n:.0e}")
        ours = _measure(_timer(OURS_STMT, env, name, layout, dtype, n, "mps_ops"), OURS_STMT, env,
                        opts.min_run_time)
        finish(env, row, ours, stock, "stock mps")
    progress.close()
    return results, rows


def write_outputs(opts, results, rows, work_table) -> None:
    from torch.utils import benchmark

    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    chip, cores = detect_chip()
    nominal = opts.bandwidth or nominal_bandwidth(chip, cores)
    for r in rows:
        if nominal and "ours_gbps" in r:
            r["pct_of_nominal"] = 100 * r["ours_gbps"] / nominal
    compare = benchmark.Compare(results)
    compare.trim_significant_figures()
    (out / "bench_ops.txt").write_text(str(compare))
    if sys.stdout.isatty():
        compare.colorize(rowwise=True)
    print(compare)
    env = {"chip": chip, "gpu_cores": cores, "nominal_bandwidth_gbps": nominal,
           "nominal_source": "--bandwidth" if opts.bandwidth else "Apple's published figure (table)",
           "torch": torch.__version__, "mps_ops_backend": mps_ops.backend,
           "macos": platform.mac_ver()[0]}
    (out / "bench_ops.json").write_text(json.dumps({"environment": env, "results": rows,
                                                    "work": work_table}, indent=2))
    md = [f"# mps_ops benchmarks on {chip or 'an unknown chip'}", "",
          f"torch {torch.__version__}, macOS {env['macos'] or '?'}, GPU cores {cores or '?'}, "
          f"nominal bandwidth {nominal or 'unknown'} GB/s ({env['nominal_source']}).", "",
          "Median time per call, torch.mps.synchronize() included. Stock: the CPU-fallback "
          "round trip (fill ops) or torch's MPS kernel (override ops). GB/s: bytes the call must "
          "move (inputs once, outputs once) over our time.", "",
          "| op | layout | dtype | n | ours µs | stock µs | stock | speedup | ours GB/s | % nominal |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "ours_us" not in r:
            md.append(f"| {r['op']} | {r['layout']} | {r['dtype']} | {r['numel']:.0e} | "
                      f"| | | | | {r.get('note', '')} |")
            continue
        pct = f"{r['pct_of_nominal']:.0f}%" if "pct_of_nominal" in r else "-"
        md.append(f"| {r['op']} | {r['layout']} | {r['dtype']} | {r['numel']:.0e} | "
                  f"{r['ours_us']:.1f} | {r['stock_us']:.1f} | {r['stock']} | {r['speedup']:.2f}x | "
                  f"{r['ours_gbps']:.1f} | {pct} |")
    md += ["", "## Nominal memory bandwidth (Apple's published figures)", "",
           "Looked up from coverage of Apple's spec pages, not read off apple.com by this "
           "script; check before quoting.", "", bandwidth_table_markdown(), "",
           "## Work figures", "", format_work(work_table, markdown=True), "",
           "```", WORK_LEGEND, "```", ""]
    (out / "bench_ops.md").write_text("\n".join(md))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no chart (pip install matplotlib)")
        return
    fig, ax = plt.subplots(figsize=(9, 5.5))
    series: dict = {}
    for r in rows:
        if "speedup" in r and r["dtype"] == "float32":
            series.setdefault(f"{r['op']} {r['layout']}", []).append((r["numel"], r["speedup"]))
    for label, points in series.items():
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter

    times = FuncFormatter(lambda v, _: f"{v:g}x")
    ax.yaxis.set_major_formatter(times)
    ax.yaxis.set_minor_formatter(times)
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_xlabel("elements")
    ax.set_ylabel("speedup over the stock path (x)")
    ax.set_title(f"mps_ops vs stock, float32, {chip or 'unknown chip'}")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "bench_ops_speedup.png", dpi=150)
    print(f"wrote {out}/bench_ops.{{txt,json,md}} and bench_ops_speedup.png")


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
    opts = parser.parse_args(argv)
    check_coverage()
    if opts.ops:
        unknown = set(opts.ops) - set(OPS)
        if unknown:
            parser.error(f"unknown ops {sorted(unknown)}; known: {', '.join(OPS)}")
    unknown = set(opts.layouts) - set(LAYOUTS)
    if unknown:
        parser.error(f"unknown layouts {sorted(unknown)}; known: {', '.join(LAYOUTS)}")

    if opts.work:
        return print_work(work_rows(names=opts.ops))
    ok, why = can_time()
    if not ok:
        print(f"bench_ops: timing needs a Mac with the Metal backend ({why}). "
              "No timings were measured and none are printed.")
        print("The work figures, which need no GPU, follow.\n")
        print_work(work_rows(names=opts.ops))
        return 0
    work_table = work_rows(names=opts.ops)
    results, rows = time_all(opts)
    write_outputs(opts, results, rows, work_table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
