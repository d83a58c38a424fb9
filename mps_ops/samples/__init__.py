"""One small valid call per registry overload, at the aten level, with each
tensor argument's role: the one sample table. The demo runs one call per op;
the sweeps (test_outputs.py, test_bad_inputs.py, test_edge_values.py,
test_index_checks.py, test_backward_layouts.py) change these calls and
compare what our kernels do with what the CPU does.

Also the element-wise ops' operand makers (ELEMENTWISE below: shape ->
tensor inside the op's domain), from which test_layouts.py, test_work.py and
the benchmarks build their layouts and sizes.

A shaped op (registry `shape:`, its stubs shared) has both derived from its
registry record: its calls from its overloads' schemas, its inputs from its
`domain:`. Only ops with stubs of their own are written out: in samples/<file>.py,
one module per stub file (below).

A sample builds fresh tensors on every call (seeded), so the CPU and our
kernels each get their own copy of in-place arguments."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Callable

import torch

from .. import _registry

# Roles of tensor arguments. Edge values go into DATA arguments only; the
# others carry meaning a NaN would not keep (indices, masks, samples).
DATA = "data"  # floating-point values the op computes with
INDEX = "index"  # indices, offsets, lengths, targets
SAMPLES = "samples"  # fractional pooling's random samples in [0, 1)
MASK = "mask"  # boolean masks
SCALAR = "scalar"  # one-element hyperparameter tensors (steps, lr, ...)
# A forward's statistics handed to its backward (layer_norm's mean and rstd):
# they follow from the input (rstd lies in (0, 1/sqrt(eps)]), so edge values
# reach them through the input's, not on their own.
STATISTICS = "statistics"


@dataclass(frozen=True)
class Sample:
    overload: str  # the registry's spelling, e.g. "take.out"
    build: Callable  # dtype -> {argument name: value}, a valid call
    roles: dict = field(default_factory=dict)  # argument name -> role (default DATA)
    dtypes: tuple = ()  # dtypes to build with; default the registry's float dtypes
    # The call's values are not pinned down by its inputs (rrelu in training
    # draws them; eig's order and phases are the implementation's choice):
    # the sweeps compare only shapes and dtypes; the op's own tests check
    # the values.
    unpinned: bool = False
    # dtype -> a valid call (or a list of calls) big enough to run every
    # kernel it reaches in at least two full threadgroups, for the GPU
    # sanitizers (tools/gpu_launch_all.py), where tiling the sample along its
    # first dim does not.
    large: Callable = None
    # The op runs other kernels under torch.use_deterministic_algorithms(True)
    # (put_ resolves repeated targets in index order there): the launcher
    # runs its calls in both modes.
    deterministic_too: bool = False
    # The CPU's float32 kernel takes ill-conditioned steps in float
    # (_dirichlet_grad's series for draws near 0 cancel by orders), so its
    # result is no reference where ours differs: the sweeps then judge both
    # by the float64 call, ours within the dtype's tolerance of it or at
    # least as close as the CPU's (as for half and bfloat16).
    cpu_float32_inexact: bool = False

    @property
    def op(self):
        return _registry.op_overload(self.overload)

    def out_names(self) -> set:
        return {a.name for a in self.op._schema.arguments if a.is_out}

    def role(self, name: str) -> str:
        return self.roles.get(name, DATA)

    def call(self, dtype, seed: int = 0) -> dict:
        torch.manual_seed(seed)
        return self.build(dtype)


def empty(dtype=torch.float32):
    """An out= argument: empty, resized by the op."""
    return torch.empty(0, dtype=dtype)


SAMPLES_BY_OVERLOAD: dict = {}


def _add(*samples):
    for s in samples:
        assert s.overload not in SAMPLES_BY_OVERLOAD, s.overload
        SAMPLES_BY_OVERLOAD[s.overload] = s


# --- shaped ops: samples from the registry --------------------------------


def maker_dtype(record) -> torch.dtype:
    """The dtype of a shaped op's operand makers: float32, or for an op
    without it (gcd: integers only) torch's default integer dtype, int64."""
    return torch.float32 if torch.float32 in record.dtypes else torch.int64


def range_maker(r: _registry.Range, dtype: torch.dtype) -> Callable:
    """shape -> a CPU tensor of dtype drawn from the range."""
    if r.integers:
        return lambda shape: torch.randint(int(r.lo), int(r.hi) + 1, shape).to(dtype)
    return lambda shape: (torch.rand(shape) * (r.hi - r.lo) + r.lo).to(dtype)


def _tensor_inputs(name: str) -> list:
    """The tensor arguments of an op's functional overload, in schema order."""
    schema = getattr(torch.ops.aten, name).default._schema
    return [a.name for a in schema.arguments if not a.is_out and isinstance(a.type, torch.TensorType)]


def shaped_makers(record) -> dict:
    """argument name -> maker, for each tensor input of a shaped op."""
    ranges = dict(record.domain)
    makers = {}
    for argument in _tensor_inputs(record.name.split("::", 1)[1]):
        r = ranges.get(argument, ranges.get("*"))
        if r is None:
            raise KeyError(f"{record.name}: its registry domain gives no range for {argument!r}")
        makers[argument] = range_maker(r, maker_dtype(record))
    return makers


SAMPLE_SHAPE = (3, 4)


def shaped_samples(record) -> list:
    """One sample per overload of a shaped op: every input drawn from its
    domain, out= (where the overload has one) empty."""
    makers = shaped_makers(record)

    def inputs(dt):
        return {argument: make(SAMPLE_SHAPE).to(dt) for argument, make in makers.items()}

    out = []
    for overload in record.overloads:
        if overload.endswith(".out"):
            # A predicate (shape unary_bool) writes bool whatever its input.
            out_dtype = (lambda dt: torch.bool) if record.shape == "unary_bool" else (lambda dt: dt)
            out.append(Sample(overload, lambda dt: dict(inputs(dt), out=empty(out_dtype(dt)))))
        else:
            out.append(Sample(overload, inputs))
    return out


for _record in _registry.ops():
    if _record.shape:
        _add(*shaped_samples(_record))


# --- element-wise operands ---------------------------------------------------


@dataclass(frozen=True)
class Elementwise:
    """An element-wise op as the layout, work and benchmark tables use it."""

    fn: Callable  # the functional call; takes out= too
    makers: tuple  # one per tensor input: shape -> CPU tensor of dtype inside the op's domain
    inplace: Callable = None  # the in-place call, if the op has one
    dtype: torch.dtype = torch.float32  # what the makers make


# --- the ops with stubs of their own: one module per stub file ---------------
#
# samples/<file>.py holds the samples of the ops whose stub is
# csrc/operations/<file>.mm (OVERLOAD_SAMPLES: one small valid call per
# overload, calls needing hand-chosen indices, masks and sizes) and, for an
# element-wise one, its operand makers (ELEMENTWISE). Adding an op with a stub
# of its own adds its module; no shared table changes.

ELEMENTWISE_WITH_STUBS: dict = {}
for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    _samples_of_file = importlib.import_module(f"{__name__}.{_module}")
    _add(*_samples_of_file.OVERLOAD_SAMPLES)
    ELEMENTWISE_WITH_STUBS.update(getattr(_samples_of_file, "ELEMENTWISE", {}))


def elementwise_ops() -> dict:
    """op name -> Elementwise for every element-wise registry op, in registry
    order: the shaped ones from their records, the others from
    ELEMENTWISE_WITH_STUBS."""
    out = {}
    for record in _registry.ops():
        name = record.name.split("::", 1)[1]
        if record.shape:
            inplace = [getattr(torch.ops.aten, o) for o in record.overloads if o == f"{name}_"]
            out[name] = Elementwise(getattr(torch.ops.aten, name), tuple(shaped_makers(record).values()),
                                    inplace=inplace[0] if inplace else None, dtype=maker_dtype(record))
        elif name in ELEMENTWISE_WITH_STUBS:
            out[name] = ELEMENTWISE_WITH_STUBS[name]
    return out


def float_dtypes(record) -> list:
    return [d for d in record.dtypes if d.is_floating_point]


def records_by_overload() -> dict:
    """The active overloads' records: an op can be active with one of its
    overloads served by torch itself (a kernel torch registers for MPS from
    Python, as linalg_lu_solve.out's in 2.10 to 2.13), whose sample would
    reach no kernel of ours."""
    active = _registry.active_overloads()
    return {o: r for r in _registry.ops() for o in r.overloads if r.active and o in active}


def samples(compat: bool = False) -> list:
    """(sample, record) for every active registry overload; with compat, also
    for those the running torch lacks, called through mps_ops_compat."""
    by_overload = records_by_overload()
    if compat:
        by_overload.update({o: r for r in _registry.ops() for o in r.overloads
                            if o in _registry.compat_overloads() and not _registry._exists(o)})
    return [(SAMPLES_BY_OVERLOAD[o], r) for o, r in by_overload.items()]


def sample_dtypes(sample, record) -> list:
    """The dtypes a sample runs with: its own, else the op's float dtypes, else
    its first dtype (integer-only ops)."""
    if sample.dtypes:
        return list(sample.dtypes)
    floats = float_dtypes(record)
    return floats or [record.dtypes[0]]


def cpu_dtype(sample, record):
    """The first of the sample's dtypes the CPU computes the sample in (so a
    comparison with the CPU compares something); float32 where none."""
    for dtype in sample_dtypes(sample, record):
        try:
            sample.op(**sample.call(dtype))
            return dtype
        except (RuntimeError, NotImplementedError):
            continue
    return torch.float32


def written_names(sample) -> set:
    """Arguments the op writes (in place or out=)."""
    return {a.name for a in sample.op._schema.arguments if a.alias_info is not None and a.alias_info.is_write}


@dataclass
class Call:
    """One call of a registry overload on CPU tensors: its arguments by
    schema name, the outputs it writes (out=, grad_input=, indices=) and the
    inputs it writes in place (self, noise, optimizer state)."""

    sample: Sample
    kwargs: dict
    outputs: list
    inplace: list

    def run(self, kwargs=None):
        return self.sample.op(**(self.kwargs if kwargs is None else kwargs))


def call_for(overload: str, dtype=None) -> Call:
    """A fresh call of `overload` in `dtype` (default: the first of its
    dtypes the CPU computes)."""
    sample = SAMPLES_BY_OVERLOAD[overload]
    if dtype is None:
        dtype = cpu_dtype(sample, records_by_overload()[overload])
    written = written_names(sample)
    arguments = sample.op._schema.arguments
    return Call(sample, sample.call(dtype), [a.name for a in arguments if a.name in written and a.is_out],
                [a.name for a in arguments if a.name in written and not a.is_out])
