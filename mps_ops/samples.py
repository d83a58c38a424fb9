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
`domain:`. Only ops with stubs of their own are written out here.

A sample builds fresh tensors on every call (seeded), so the CPU and our
kernels each get their own copy of in-place arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from . import _registry

# Roles of tensor arguments. Edge values go into DATA arguments only; the
# others carry meaning a NaN would not keep (indices, masks, samples).
DATA = "data"  # floating-point values the op computes with
INDEX = "index"  # indices, offsets, lengths, targets
SAMPLES = "samples"  # fractional pooling's random samples in [0, 1)
MASK = "mask"  # boolean masks
SCALAR = "scalar"  # one-element hyperparameter tensors (steps, lr, ...)


@dataclass(frozen=True)
class Sample:
    overload: str  # the registry's spelling, e.g. "take.out"
    build: Callable  # dtype -> {argument name: value}, a valid call
    roles: dict = field(default_factory=dict)  # argument name -> role (default DATA)
    dtypes: tuple = ()  # dtypes to build with; default the registry's float dtypes
    # The call's result is not pinned down by its inputs (rrelu in training):
    # compare only its shape and dtype.
    random: bool = False

    @property
    def op(self):
        name, _, overload = self.overload.partition(".")
        return getattr(getattr(torch.ops.aten, name), overload or "default")

    def out_names(self) -> set:
        return {a.name for a in self.op._schema.arguments if a.is_out}

    def role(self, name: str) -> str:
        return self.roles.get(name, DATA)

    def call(self, dtype, seed: int = 0) -> dict:
        torch.manual_seed(seed)
        return self.build(dtype)


def _empty(dtype=torch.float32):
    return torch.empty(0, dtype=dtype)


def _heaviside(dt):
    return dict(self=torch.randint(-1, 2, (3, 4)).to(dt), values=torch.rand(3, 4).to(dt))


def _take(dt):
    return dict(self=torch.randn(3, 4).to(dt), index=torch.tensor([[0, -1, 5], [11, 3, -12]]))


def _put(dt):
    return dict(self=torch.randn(3, 4).to(dt), index=torch.tensor([0, -1, 5, 5]),
                source=torch.randn(4).to(dt), accumulate=True)


def _rrelu(dt, training=False):
    return dict(self=torch.randn(3, 4).to(dt), noise=torch.zeros(3, 4).to(dt), lower=0.1, upper=0.3,
                training=training)


def _lanczos(dt):
    return dict(self=torch.randn(1, 2, 5, 6).to(dt), output_size=[3, 8], align_corners=False)


def _lanczos_backward(dt):
    return dict(grad_output=torch.randn(1, 2, 3, 8).to(dt), output_size=[3, 8], input_size=[1, 2, 5, 6],
                align_corners=False)


# 16 elements: the CPU's vectorized loop covers them all (its scalar tail
# loop treats NaN and rounding differently; see test_add_relu.py).
def _add_relu(dt):
    return dict(self=torch.randn(2, 8).to(dt), other=torch.randn(2, 8).to(dt), alpha=1.5)


def _batch_norm_stats(dt):
    return dict(input=torch.randn(4, 3, 5).to(dt), running_mean=torch.zeros(3).to(dt),
                running_var=torch.ones(3).to(dt), momentum=0.1)


def _pool3d(dt):
    return torch.randn(2, 3, 5, 4, 6).to(dt)


def _adaptive_max_indices():
    # adaptive_max_pool3d's indices of a (2, 3, 5, 4, 6) input pooled to (2, 2, 3).
    _, indices = torch.ops.aten.adaptive_max_pool3d(torch.randn(2, 3, 5, 4, 6), [2, 2, 3])
    return indices


def _multi_margin(dt):
    return dict(self=torch.randn(4, 5).to(dt), target=torch.tensor([0, 4, 2, 1]), p=1, margin=1.0,
                weight=torch.rand(5).to(dt), reduction=1)


def _multilabel(dt):
    return dict(self=torch.randn(3, 5).to(dt),
                target=torch.tensor([[3, 0, -1, 1, 2], [4, 4, 1, -1, 0], [-1, 0, 0, 0, 0]]), reduction=1)


def _multilabel_backward(dt):
    args = dict(_multilabel(dt), reduction=0)
    _, is_target = torch.ops.aten.multilabel_margin_loss_forward(args["self"].float(), args["target"], 0)
    return dict(grad_output=torch.randn(3).to(dt), is_target=is_target.to(dt), **args)


def _adagrad(dt, tensor_lr=False):
    args = dict(self=[torch.randn(3, 4).to(dt)], grads=[torch.randn(3, 4).to(dt)],
                state_sums=[torch.rand(3, 4).to(dt)], state_steps=[torch.tensor(2.0)], lr_decay=0.01,
                weight_decay=0.1, eps=1e-10, maximize=False)
    args["lr"] = torch.tensor(0.05) if tensor_lr else 0.05
    return args


def _glu_jvp(dt):
    x, dx = torch.randn(3, 4).to(dt), torch.randn(3, 4).to(dt)
    return dict(glu=torch.nn.functional.glu(x.float(), 1).to(dt), x=x, dx=dx, dim=1)


def _glu_backward_jvp(dt):
    x, dx = torch.randn(3, 4).to(dt), torch.randn(3, 4).to(dt)
    grad_glu, dgrad_glu = torch.randn(3, 2).to(dt), torch.randn(3, 2).to(dt)
    return dict(grad_x=torch.randn(3, 4).to(dt), grad_glu=grad_glu, x=x, dgrad_glu=dgrad_glu, dx=dx, dim=1)


def _masked_softmax(dt):
    return dict(self=torch.randn(2, 3, 4).to(dt), mask=torch.rand(2, 3, 4) > 0.6, dim=-1)


def _masked_softmax_backward(dt):
    mask = torch.rand(2, 3, 4) > 0.6
    output = torch.ops.aten._masked_softmax(torch.randn(2, 3, 4), mask, -1).to(dt)
    return dict(grad_output=torch.randn(2, 3, 4).to(dt), output=output, mask=mask, dim=-1)


def _segment_reduce(dt):
    return dict(data=torch.randn(6, 3).to(dt), reduce="sum", lengths=torch.tensor([2, 0, 3, 1]), axis=0,
                unsafe=False)


def _segment_reduce_backward(dt):
    data = torch.randn(6, 3).to(dt)
    offsets = torch.tensor([0, 2, 2, 5, 6])
    output = torch.segment_reduce(data.float(), "max", offsets=offsets).to(dt)
    return dict(grad=torch.randn(4, 3).to(dt), output=output, data=data, reduce="max", offsets=offsets,
                axis=0)


def _fractional(rank):
    shape = (2, 3, 7, 6) if rank == 2 else (2, 3, 5, 7, 6)
    kernel = [2] * rank
    output = [3] * rank

    def forward(dt):
        return dict(self=torch.randn(shape).to(dt), kernel_size=kernel, output_size=output,
                    random_samples=torch.rand(2, 3, rank).to(dt))

    def backward(dt):
        args = forward(dt)
        op = getattr(torch.ops.aten, f"fractional_max_pool{rank}d")
        _, indices = op(args["self"].float(), kernel, output, args["random_samples"].float())
        out_shape = shape[:-rank] + (3,) * rank
        return dict(grad_output=torch.randn(out_shape).to(dt), self=args["self"], kernel_size=kernel,
                    output_size=output, indices=indices)

    name = f"fractional_max_pool{rank}d"
    samples_role = {"random_samples": SAMPLES}
    return [
        Sample(name, forward, samples_role),
        Sample(f"{name}.output", lambda dt: dict(forward(dt), output=_empty(dt), indices=_empty(torch.long)),
               samples_role),
        Sample(f"{name}_backward", backward, {"indices": INDEX}),
        Sample(f"{name}_backward.grad_input", lambda dt: dict(backward(dt), grad_input=_empty(dt)),
               {"indices": INDEX}),
    ]


def _logspace(dt):
    return dict(start=-2.0, end=3.0, steps=6, base=10.0, out=_empty(dt))


SAMPLES_BY_OVERLOAD: dict = {}


def _add(*samples):
    for s in samples:
        assert s.overload not in SAMPLES_BY_OVERLOAD, s.overload
        SAMPLES_BY_OVERLOAD[s.overload] = s


_add(
    Sample("heaviside", _heaviside),
    Sample("heaviside.out", lambda dt: dict(_heaviside(dt), out=_empty(dt))),
    Sample("heaviside_", _heaviside),
    Sample("frexp.Tensor_out", lambda dt: dict(self=torch.randn(3, 4).to(dt) * 100, mantissa=_empty(dt),
                                               exponent=_empty(torch.int32))),
    Sample("take", _take, {"index": INDEX}),
    Sample("take.out", lambda dt: dict(_take(dt), out=_empty(dt)), {"index": INDEX}),
    Sample("put_", _put, {"index": INDEX}),
    Sample("rrelu_with_noise", _rrelu),
    Sample("rrelu_with_noise.out", lambda dt: dict(_rrelu(dt), out=_empty(dt))),
    # Training draws slopes; the CPU trains only in float32 and float64.
    Sample("rrelu_with_noise_", lambda dt: _rrelu(dt, training=True), dtypes=(torch.float32,), random=True),
    Sample("_upsample_lanczos2d_aa", _lanczos),
    Sample("_upsample_lanczos2d_aa.out", lambda dt: dict(_lanczos(dt), out=_empty(dt))),
    Sample("_upsample_lanczos2d_aa_backward", _lanczos_backward),
    Sample("_upsample_lanczos2d_aa_backward.grad_input",
           lambda dt: dict(_lanczos_backward(dt), grad_input=_empty(dt))),
    Sample("_add_relu.Tensor", _add_relu),
    Sample("_add_relu.out", lambda dt: dict(_add_relu(dt), out=_empty(dt))),
    Sample("_add_relu_.Tensor", _add_relu),
    Sample("_add_relu.Scalar", lambda dt: dict(self=torch.randn(2, 8).to(dt), other=-0.5, alpha=2)),
    Sample("_add_relu_.Scalar", lambda dt: dict(self=torch.randn(2, 8).to(dt), other=0.25, alpha=1)),
    Sample("max.unary_out", lambda dt: dict(self=torch.randn(3, 4).to(dt), out=_empty(dt))),
    Sample("min.unary_out", lambda dt: dict(self=torch.randn(3, 4).to(dt), out=_empty(dt))),
    Sample("_aminmax", lambda dt: dict(self=torch.randn(3, 4).to(dt))),
    Sample("_aminmax.dim", lambda dt: dict(self=torch.randn(3, 4).to(dt), dim=1, keepdim=False)),
    Sample("var.correction_out", lambda dt: dict(self=torch.randn(3, 4).to(dt), dim=[1], correction=1,
                                                 keepdim=False, out=_empty(dt))),
    Sample("std.correction_out", lambda dt: dict(self=torch.randn(3, 4).to(dt), dim=[0], correction=0,
                                                 keepdim=True, out=_empty(dt))),
    Sample("batch_norm_update_stats", _batch_norm_stats),
    Sample("logspace.out", _logspace),
    Sample("logit_", lambda dt: dict(self=torch.rand(3, 4).to(dt), eps=1e-3)),
    Sample("channel_shuffle", lambda dt: dict(self=torch.randn(2, 4, 3).to(dt), groups=2)),
    Sample("narrow_copy.out", lambda dt: dict(self=torch.randn(3, 5).to(dt), dim=1, start=1, length=3,
                                              out=_empty(dt))),
    Sample("_adaptive_avg_pool3d", lambda dt: dict(self=_pool3d(dt), output_size=[2, 2, 3])),
    Sample("adaptive_avg_pool3d.out", lambda dt: dict(self=_pool3d(dt), output_size=[2, 2, 3], out=_empty(dt))),
    Sample("_adaptive_avg_pool3d_backward",
           lambda dt: dict(grad_output=torch.randn(2, 3, 2, 2, 3).to(dt), self=_pool3d(dt))),
    Sample("adaptive_avg_pool3d_backward.grad_input",
           lambda dt: dict(grad_output=torch.randn(2, 3, 2, 2, 3).to(dt), self=_pool3d(dt),
                           grad_input=_empty(dt))),
    Sample("adaptive_max_pool3d", lambda dt: dict(self=_pool3d(dt), output_size=[2, 2, 3])),
    Sample("adaptive_max_pool3d.out", lambda dt: dict(self=_pool3d(dt), output_size=[2, 2, 3], out=_empty(dt),
                                                      indices=_empty(torch.long))),
    Sample("adaptive_max_pool3d_backward",
           lambda dt: dict(grad_output=torch.randn(2, 3, 2, 2, 3).to(dt), self=_pool3d(dt),
                           indices=_adaptive_max_indices()), {"indices": INDEX}),
    Sample("adaptive_max_pool3d_backward.grad_input",
           lambda dt: dict(grad_output=torch.randn(2, 3, 2, 2, 3).to(dt), self=_pool3d(dt),
                           indices=_adaptive_max_indices(), grad_input=_empty(dt)), {"indices": INDEX}),
    Sample("_pdist_forward", lambda dt: dict(self=torch.randn(4, 3).to(dt), p=2.0)),
    Sample("_pdist_backward", lambda dt: (lambda x: dict(grad=torch.randn(6).to(dt), self=x, p=2.0,
                                                         pdist=torch.pdist(x.float()).to(dt)))(
        torch.randn(4, 3).to(dt))),
    Sample("multi_margin_loss", _multi_margin, {"target": INDEX}),
    Sample("multi_margin_loss.out", lambda dt: dict(_multi_margin(dt), out=_empty(dt)), {"target": INDEX}),
    # Backward samples without reduction: one gradient per sample.
    Sample("multi_margin_loss_backward",
           lambda dt: dict(_multi_margin(dt), reduction=0, grad_output=torch.randn(4).to(dt)), {"target": INDEX}),
    Sample("multi_margin_loss_backward.grad_input",
           lambda dt: dict(_multi_margin(dt), reduction=0, grad_output=torch.randn(4).to(dt), grad_input=_empty(dt)),
           {"target": INDEX}),
    Sample("multilabel_margin_loss_forward", _multilabel, {"target": INDEX}),
    Sample("multilabel_margin_loss_forward.output",
           lambda dt: dict(_multilabel(dt), output=_empty(dt), is_target=_empty(dt)), {"target": INDEX}),
    Sample("multilabel_margin_loss_backward", _multilabel_backward, {"target": INDEX, "is_target": MASK}),
    Sample("multilabel_margin_loss_backward.grad_input",
           lambda dt: dict(_multilabel_backward(dt), grad_input=_empty(dt)), {"target": INDEX, "is_target": MASK}),
    Sample("mode", lambda dt: dict(self=torch.randint(0, 3, (3, 5)).to(dt), dim=-1, keepdim=False)),
    Sample("embedding_renorm_", lambda dt: dict(self=torch.randn(5, 3).to(dt) * 2,
                                                indices=torch.tensor([0, 3, 3, -1]), max_norm=1.0,
                                                norm_type=2.0), {"indices": INDEX}),
    Sample("_fused_adagrad_", _adagrad, {"state_steps": SCALAR}),
    Sample("_fused_adagrad_.tensor_lr", lambda dt: _adagrad(dt, tensor_lr=True),
           {"state_steps": SCALAR, "lr": SCALAR}),
    Sample("glu_jvp", _glu_jvp),
    # The CPU's composite rounds each op in half: compare in float32.
    Sample("glu_backward_jvp", _glu_backward_jvp, dtypes=(torch.float32,)),
    Sample("_masked_softmax", _masked_softmax, {"mask": MASK}),
    Sample("_masked_softmax_backward", _masked_softmax_backward, {"mask": MASK}),
    Sample("segment_reduce", _segment_reduce, {"lengths": INDEX}),
    Sample("_segment_reduce_backward", _segment_reduce_backward, {"offsets": INDEX}),
    *_fractional(2), *_fractional(3),
)


# --- shaped ops: samples from the registry --------------------------------


def range_maker(r: _registry.Range) -> Callable:
    """shape -> a float32 CPU tensor drawn from the range."""
    if r.integers:
        return lambda shape: torch.randint(int(r.lo), int(r.hi) + 1, shape).float()
    return lambda shape: torch.rand(shape) * (r.hi - r.lo) + r.lo


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
        makers[argument] = range_maker(r)
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
            out.append(Sample(overload, lambda dt: dict(inputs(dt), out=_empty(dt))))
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
    makers: tuple  # one per tensor input: shape -> float32 CPU tensor inside the op's domain
    inplace: Callable = None  # the in-place call, if the op has one


# Element-wise ops with stubs of their own (shaped ops come from the registry).
ELEMENTWISE_WITH_STUBS = {
    "frexp": Elementwise(torch.frexp, (lambda shape: torch.randn(shape) * 100,)),
    # Zeros in self: where heaviside takes `values`.
    "heaviside": Elementwise(torch.heaviside, (lambda shape: torch.randint(-1, 2, shape).float(),
                                               lambda shape: torch.rand(shape)),
                             inplace=torch.Tensor.heaviside_),
    "_add_relu": Elementwise(lambda a, b, **kw: torch._add_relu(a, b, alpha=1.5, **kw),
                             (lambda shape: torch.randn(shape), lambda shape: torch.randn(shape)),
                             inplace=lambda a, b: torch.ops.aten._add_relu_.Tensor(a, b, alpha=1.5)),
}


def elementwise_ops() -> dict:
    """op name -> Elementwise for every element-wise registry op, in registry
    order: the shaped ones from their records, the others from
    ELEMENTWISE_WITH_STUBS."""
    out = {}
    for record in _registry.ops():
        name = record.name.split("::", 1)[1]
        if record.shape:
            out[name] = Elementwise(getattr(torch.ops.aten, name), tuple(shaped_makers(record).values()))
        elif name in ELEMENTWISE_WITH_STUBS:
            out[name] = ELEMENTWISE_WITH_STUBS[name]
    return out


def float_dtypes(record) -> list:
    return [d for d in record.dtypes if d.is_floating_point]


def records_by_overload() -> dict:
    return {o: r for r in _registry.ops() for o in r.overloads if r.active}


def samples() -> list:
    """(sample, record) for every active registry overload."""
    by_overload = records_by_overload()
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
