"""mps_ops.profile(): every kernel dispatch made inside the block, and what it bound.

    with mps_ops.profile() as prof:
        torch.special.ndtri(x)
    print(prof.table())           # one row per kernel: calls, threads, bytes bound
    prof.dispatches[0].buffers    # bytes bound in each argument slot

Bytes. ``Dispatch.buffers`` holds, per ``[[buffer(N)]]`` slot in index order,
the bytes bound there: for a tensor buffer the span from the first to one past
the last byte its view can reach (a ``[:, ::2]`` view spans about twice its
elements), for an inline (setBytes) argument its size. Element-wise kernels
(host names ``<op>_<variant>_<out>_<in>``, docs/design.md) split their slots
into *operands*, the outputs then the inputs, and *metadata*, the sizes,
strides and ndim that the ``strided`` variant takes inline after them; a few
other ops name their kernels in the same grammar but bind their own metadata
after their operands (``OPERAND_SLOTS``, e.g. take). "Bytes bound" in the
tables here means the operand slots: the tensor buffers, and a 0-dim CPU
operand bound inline as its value (its itemsize; it is operand data, not
metadata). Kernels outside the grammar (``compile_shader``'s) count every slot
as an operand. Host stubs mark their operand slots (``Dispatch.operands``);
where a record has no mark, the split is inferred from the kernel's name.
``Dispatch.inline`` and ``Dispatch.itemsizes`` say, per slot, whether it was
bound as inline bytes and the bound tensor's itemsize (test/test_bindings.py
compares them with the kernel's declared parameters).

Work figures. ``bytes_to_move(inputs, outputs)`` is what a call must move at
least: every input read once, every output written once. An input counts its
distinct elements (a stride-0 dimension, as in ``expand``, counts once) times
its itemsize; a 0-dim CPU scalar counts its itemsize; Python numbers count 0.
An output counts numel * itemsize. ``measure_work(fn, ...)`` runs a call on our
kernels (through ``mps_ops.testing.emulate()`` on the emulator) and returns
both figures, the dispatches and the aten copies made inside the call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import _C

# The host-name grammar (csrc/runtime/host_name.cpp).
METAL_TYPES = ("bool", "uchar", "char", "short", "int", "long", "ushort", "uint", "ulong", "half",
               "bfloat", "float")
VARIANTS = ("dense_lhs_scalar", "dense_rhs_scalar", "dense", "strided", "reduce", "merge")  # longest first
# Inline slots that the strided variant binds after its operands: sizes, strides, ndim.
STRIDED_METADATA_SLOTS = 3
# Ops named in the grammar whose kernels bind a fixed number of operand slots
# followed by their own inline metadata (csrc/operations/<op>.mm).
OPERAND_SLOTS = {
    "take": 3,  # out, index, self; then sizes, strides, ndim, numel
}
# aten ops that copy tensor data; none may run inside an element-wise call on
# inputs of the kernel's dtype.
COPY_OPS = frozenset({"aten::copy_", "aten::clone", "aten::contiguous", "aten::_to_copy",
                      "aten::to", "aten::_copy_from", "aten::_copy_from_and_resize"})


def parse_host_name(kernel: str):
    """"log_ndtr_dense_float_int" -> ("log_ndtr", "dense", "float", "int"); None for a name
    outside the element-wise grammar."""
    parts = kernel.split("_")
    if len(parts) < 4 or parts[-1] not in METAL_TYPES or parts[-2] not in METAL_TYPES:
        return None
    stem = "_".join(parts[:-2])
    for variant in VARIANTS:
        if stem.endswith("_" + variant) and len(stem) > len(variant) + 1:
            return stem[: -len(variant) - 1], variant, parts[-2], parts[-1]
    return None


@dataclass(frozen=True)
class Dispatch:
    kernel: str  # host name, e.g. "ndtri_dense_float_float"
    threads: tuple  # grid size (x, y, z), dispatchThreads semantics
    group_size: tuple  # threads per threadgroup (x, y, z)
    buffers: tuple  # bytes bound, one int per argument slot
    operands: int = -1  # leading slots that are operands, as the host stub said; -1 if unsaid
    inline: tuple = ()  # per slot: True where bound as inline bytes (setBytes), not a buffer
    itemsizes: tuple = ()  # per slot: the bound tensor's itemsize; 0 for inline bytes or unknown

    @property
    def op(self):
        """The kernel's op, e.g. "log_ndtr"; None outside the grammar."""
        parsed = parse_host_name(self.kernel)
        return parsed[0] if parsed else None

    @property
    def variant(self):
        """"dense", "strided", "dense_lhs_scalar", "dense_rhs_scalar", "reduce", "merge"; None outside
        the grammar."""
        parsed = parse_host_name(self.kernel)
        return parsed[1] if parsed else None

    @property
    def operand_slots(self) -> int:
        """How many leading slots carry operands (outputs, then inputs)."""
        if self.operands >= 0:
            return min(self.operands, len(self.buffers))
        parsed = parse_host_name(self.kernel)
        if parsed is None:
            return len(self.buffers)
        op, variant = parsed[0], parsed[1]
        if op in OPERAND_SLOTS:
            return min(OPERAND_SLOTS[op], len(self.buffers))
        if variant == "strided":
            return max(0, len(self.buffers) - STRIDED_METADATA_SLOTS)
        return len(self.buffers)

    @property
    def operand_bytes(self) -> int:
        """Bytes bound for operands: what the tables call "bytes bound"."""
        return sum(self.buffers[: self.operand_slots])

    @property
    def metadata_bytes(self) -> int:
        """Inline sizes/strides/ndim of the strided variant; 0 otherwise."""
        return sum(self.buffers[self.operand_slots:])

    @property
    def thread_count(self) -> int:
        x, y, z = self.threads
        return x * y * z


class Profile:
    """Context manager; ``.dispatches`` is filled when the block exits."""

    def __init__(self):
        self.dispatches: list = []

    def __enter__(self):
        self._mark = _C.profile_start()
        return self

    def __exit__(self, *exc):
        self.dispatches = [
            Dispatch(kernel, tuple(threads), tuple(group), tuple(buffers), operands, tuple(inline),
                     tuple(itemsizes))
            for kernel, threads, group, buffers, operands, inline, itemsizes in _C.profile_stop(self._mark)
        ]
        return False

    def __len__(self) -> int:
        return len(self.dispatches)

    def kernels(self) -> list:
        return [d.kernel for d in self.dispatches]

    def operand_bytes(self) -> int:
        """Bytes bound for operands over all dispatches."""
        return sum(d.operand_bytes for d in self.dispatches)

    def metadata_bytes(self) -> int:
        return sum(d.metadata_bytes for d in self.dispatches)

    def table(self, per_dispatch: bool = False) -> str:
        """A summary: one row per kernel (in order of first dispatch), or one per
        dispatch with ``per_dispatch=True``; a total row at the end."""
        if per_dispatch:
            rows = [(d.kernel, 1, d.thread_count, _grid(d.threads), _grid(d.group_size),
                     d.operand_bytes, d.metadata_bytes) for d in self.dispatches]
        else:
            grouped: dict = {}
            for d in self.dispatches:
                row = grouped.setdefault(d.kernel, [d.kernel, 0, 0, set(), set(), 0, 0])
                row[1] += 1
                row[2] += d.thread_count
                row[3].add(_grid(d.threads))
                row[4].add(_grid(d.group_size))
                row[5] += d.operand_bytes
                row[6] += d.metadata_bytes
            rows = [(k, n, t, _one_or_many(grids), _one_or_many(groups), b, m)
                    for k, n, t, grids, groups, b, m in grouped.values()]
        header = ("kernel", "calls", "threads", "grid", "group", "bytes bound", "inline meta")
        total = ("total", sum(r[1] for r in rows), sum(r[2] for r in rows), "", "",
                 sum(r[5] for r in rows), sum(r[6] for r in rows))
        body = [tuple(_cell(v) for v in r) for r in rows]
        return _format_table(header, body, tuple(_cell(v) for v in total),
                             right=(1, 2, 5, 6))

    def __str__(self) -> str:
        return self.table()


def profile() -> Profile:
    return Profile()


# Work figures -------------------------------------------------------------


def input_bytes(t) -> int:
    """Bytes an input must be read: its distinct elements (stride-0 dimensions
    count once) times its itemsize; a 0-dim tensor (a CPU scalar) its itemsize."""
    if t.numel() == 0:
        return 0
    distinct = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            distinct *= size
    return distinct * t.element_size()


def output_bytes(t) -> int:
    return t.numel() * t.element_size()


def bytes_to_move(inputs, outputs) -> int:
    """Inputs read once plus outputs written once (see the module docstring)."""
    return sum(input_bytes(t) for t in inputs) + sum(output_bytes(t) for t in outputs)


@dataclass(frozen=True)
class Work:
    dispatches: tuple  # Dispatch records of the call
    bytes_bound: int  # operand bytes bound over all dispatches
    metadata_bytes: int  # inline sizes/strides/ndim
    bytes_to_move: int  # inputs read once + outputs written once
    copies: tuple = field(default=())  # outermost aten copy ops run inside the call

    @property
    def ratio(self) -> float:
        """bytes bound / bytes to move (1.0 when both are 0)."""
        if self.bytes_to_move == 0:
            return 1.0 if self.bytes_bound == 0 else float("inf")
        return self.bytes_bound / self.bytes_to_move

    @property
    def variants(self) -> tuple:
        return tuple(d.variant or d.kernel for d in self.dispatches)


def tensors_in(tree) -> list:
    """The tensors of a nest of lists, tuples and dicts, in order."""
    import torch
    from torch.utils._pytree import tree_leaves

    return [t for t in tree_leaves(tree) if isinstance(t, torch.Tensor)]


def _copies_during(fn):
    """Runs fn() and returns (its result, the outermost aten copy ops run meanwhile:
    a ``.contiguous()`` is one entry, not its clone and copy_ as well)."""
    try:
        from torch.autograd.profiler_legacy import profile as op_profile  # quiet, no kineto
    except ImportError:  # pragma: no cover - newer torch
        from torch.autograd.profiler import profile as op_profile
    with op_profile() as prof:
        result = fn()
    copies = []
    for event in prof.function_events:
        if event.name not in COPY_OPS:
            continue
        parent = event.cpu_parent
        while parent is not None and parent.name not in COPY_OPS:
            parent = parent.cpu_parent
        if parent is None:
            copies.append(event.name)
    return result, tuple(copies)


def measure_work(fn, *args, trace_copies: bool = True, **kwargs):
    """Runs ``fn(*args, **kwargs)`` on our kernels (through ``emulate()`` on the
    emulator backend) and returns ``(result, Work)``.

    Inputs are the tensors among args and kwargs except an ``out=`` argument;
    outputs are the tensors of the result (an in-place call's self is both,
    as it is read and written). With ``trace_copies`` the aten ops dispatched
    inside the call are traced and the outermost copies among them (a hidden
    ``.contiguous()``, ``.to(dtype)``, ``copy_``) kept in ``Work.copies``.
    """
    from .testing import emulate

    inputs = tensors_in((args, {k: v for k, v in kwargs.items() if k != "out"}))

    def call():
        with Profile() as prof, emulate():
            result = fn(*args, **kwargs)
        return result, prof

    if trace_copies:
        (result, prof), copies = _copies_during(call)
    else:
        result, prof = call()
        copies = ()
    work = Work(dispatches=tuple(prof.dispatches), bytes_bound=prof.operand_bytes(),
                metadata_bytes=prof.metadata_bytes(),
                bytes_to_move=bytes_to_move(inputs, tensors_in(result)), copies=copies)
    return result, work


# Formatting ---------------------------------------------------------------


def _grid(dims) -> str:
    return "x".join(str(v) for v in dims)


def _one_or_many(values: set) -> str:
    return next(iter(values)) if len(values) == 1 else "(various)"


def _cell(value) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def _format_table(header, rows, total=None, right=()) -> str:
    all_rows = [header, *rows] + ([total] if total else [])
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(header))]

    def line(r):
        return "  ".join(v.rjust(w) if i in right else v.ljust(w)
                         for i, (v, w) in enumerate(zip(r, widths))).rstrip()

    rule = "  ".join("-" * w for w in widths)
    out = [line(header), rule, *(line(r) for r in rows)]
    if not rows:
        out.append("(no kernel dispatched)")
    if total:
        out += [rule, line(total)]
    return "\n".join(out)
