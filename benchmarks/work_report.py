"""The work table: per registry op, call form and layout, the dispatches of
one call and the operand bytes they bind against the bytes the call must
move (mps_ops/profiling.py defines both). Contiguous and transposed layouts
of an element-wise op must take one dispatch, stay within WORK_LIMIT and run
no aten copy."""

from __future__ import annotations

import torch

import mps_ops
from mps_ops.profiling import measure_work
from mps_ops.testing import device
from op_inputs import OPS, OpSpec, layout_inputs, registry_ops, to_device

WORK_LIMIT = 1.05

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
# Three operands (addcmul, addcdiv, where): no scalar or two-shape broadcast rows.
WORK_ROWS_TERNARY = [
    ("fn", "dense", True), ("fn", "transposed", True), ("out=", "dense", True),
    ("out=", "transposed", True), ("inplace", "dense", True), ("inplace", "transposed", True),
    ("fn", "strided", False), ("fn", "zero_dim", False),
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
    target = device()
    table = []
    for name, record in registry_ops().items():
        if names and name not in names:
            continue
        spec = OPS.get(name)
        if spec is None:
            table.append({"op": name, "call": "-", "layout": "-", "asserted": False,
                          "kernels": "(no benchmark inputs: benchmarks/op_inputs.py)", "check": "-"})
            continue
        if spec.kind == "gather":
            plan = WORK_ROWS_GATHER
        elif spec.kind == "reduction":
            plan = WORK_ROWS_REDUCTION
        elif spec.kind == "inplace_only":
            plan = WORK_ROWS_INPLACE_ONLY
        elif spec.kind in ("optimizer", "factory"):
            plan = WORK_ROWS_DENSE_ONLY
        elif spec.kind in ("view_copy", "pool", "loss", "scatter", "activation", "normalization"):
            plan = WORK_ROWS_VIEW_COPY
        else:
            plan = {2: WORK_ROWS_BINARY, 3: WORK_ROWS_TERNARY}.get(len(spec.makers), WORK_ROWS_UNARY)
        for form, layout, asserted in plan:
            if form == "inplace" and spec.inplace is None:
                continue
            row = {"op": name, "call": form, "layout": layout, "asserted": asserted}
            if not record.active:
                row.update(kernels="(not registered: torch has an MPS kernel)", check="-")
                table.append(row)
                continue
            torch.manual_seed(0)
            inputs = to_device(layout_inputs(spec, layout, rows, cols, spec.dtype), target)
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
    print(f"work figures ({mps_ops.backend} backend), float32 (an op without float32: its "
          "operand makers' dtype), result shape 24x37:")
    print(format_work(table))
    print()
    print(WORK_LEGEND)
    failed = [r for r in table if r.get("check") == "FAIL"]
    if failed:
        print(f"\n{len(failed)} row(s) FAIL the element-wise work check")
        return 1
    return 0
