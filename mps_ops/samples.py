"""One small valid call of every registry op, and every overload's call derived from it.

``SAMPLES`` maps a functional aten overload (no written-to outputs) to the
arguments, by schema name, of one call inside its domain. ``call_for(overload)``
derives a call of any registry overload from its functional sibling's
sample: an out=, grad_input= or in-place form takes the sibling's inputs, and
fresh outputs shaped like the sibling's CPU result. The demo runs one call per
op; test/test_outputs.py derives every output-tensor check from the same calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

aten = torch.ops.aten


def _generator():
    return torch.Generator().manual_seed(0)


def _randn(*shape):
    return torch.randn(*shape, generator=_generator())


def _rand(*shape):
    return torch.rand(*shape, generator=_generator())


def _max_pool3d_sample():
    x = _randn(1, 2, 4, 4, 4)
    return dict(grad_output=_randn(1, 2, 2, 2, 2), self=x,
                indices=aten.adaptive_max_pool3d(x, [2, 2, 2])[1])


def _fractional_sample(rank: int):
    x = _randn(1, 2, *([6] * rank))
    kernel, size = [2] * rank, [3] * rank
    samples = _rand(1, 2, rank)
    pool = aten.fractional_max_pool2d if rank == 2 else aten.fractional_max_pool3d
    output, indices = pool(x, kernel, size, samples)
    return dict(self=x, kernel_size=kernel, output_size=size, random_samples=samples,
                grad_output=_randn(*output.shape), indices=indices)


def _multilabel_sample():
    x = _randn(3, 4)
    target = torch.tensor([[3, 0, -1, 1], [1, 2, 3, -1], [-1, 0, 0, 0]])
    _, is_target = aten.multilabel_margin_loss_forward(x, target, 1)
    return dict(grad_output=torch.tensor(1.0), self=x, target=target, reduction=1,
                is_target=is_target)


def _pdist_sample():
    x = _randn(4, 3)
    return dict(grad=_randn(6), self=x, p=2.0, pdist=aten._pdist_forward(x, 2.0))


def _glu_sample():
    x = _randn(4, 6)
    return dict(glu=aten.glu(x, 1), x=x, dx=_randn(4, 6), grad_x=_randn(4, 6), grad_glu=_randn(4, 3),
                dgrad_glu=_randn(4, 3), dim=1)


def _masked_softmax_sample():
    x = _randn(3, 5)
    mask = torch.tensor([[1, 0, 1, 1, 0], [0, 0, 0, 0, 1], [1, 1, 1, 1, 1]], dtype=torch.bool)
    return dict(self=x, mask=mask, dim=-1, grad_output=_randn(3, 5),
                output=aten._masked_softmax(x, mask, -1))


def _segment_sample():
    data = _randn(6, 2)
    lengths = torch.tensor([2, 0, 4])
    output = aten.segment_reduce(data, "sum", lengths=lengths)
    return dict(data=data, reduce="sum", lengths=lengths, grad=torch.ones_like(output), output=output)


def _adagrad_sample(tensor_lr: bool):
    lr = torch.tensor(0.1) if tensor_lr else 0.1
    return dict(self=[_randn(5)], grads=[_rand(5)], state_sums=[torch.zeros(5)],
                state_steps=[torch.tensor(1.0)], lr=lr, lr_decay=0.0, weight_decay=0.0, eps=1e-10,
                maximize=False)


def _lanczos_sample():
    return dict(self=_rand(1, 2, 4, 4) * 4, grad_output=_randn(1, 2, 3, 6), output_size=[3, 6],
                input_size=[1, 2, 4, 4], align_corners=False)


SAMPLES = {
    "special_ndtri": lambda: dict(self=torch.tensor([1e-30, 0.025, 0.5, 0.975, 1.0])),
    "special_log_ndtr": lambda: dict(self=torch.tensor([-40.0, -3.0, 0.0, 3.0, 10.0])),
    "special_airy_ai": lambda: dict(x=torch.tensor([-20.0, -2.5, 0.0, 2.5, 20.0])),
    "special_laguerre_polynomial_l": lambda: dict(x=torch.tensor([0.0, 0.5, 1.0, 2.0, 4.0]),
                                                  n=torch.tensor([0.0, 1.0, 2.0, 3.0, 7.0])),
    "special_legendre_polynomial_p": lambda: dict(x=torch.tensor([-1.0, -0.5, 0.0, 0.5, 1.0]),
                                                  n=torch.tensor([0.0, 1.0, 2.0, 4.0, 5.0])),
    "heaviside": lambda: dict(self=torch.tensor([-2.0, 0.0, 3.0, 0.0]),
                              values=torch.tensor([0.5, 0.5, 0.5, 2.0])),
    "frexp.Tensor": lambda: dict(self=torch.tensor([8.0, 0.3, -5.0, 0.0, 1e-40])),
    "take": lambda: dict(self=_randn(3, 4), index=torch.tensor([0, -1, 5, 11, 5])),
    "put": lambda: dict(self=_randn(3, 4), index=torch.tensor([0, -1, 5, 5]),
                        source=torch.tensor([1.0, 2.0, 3.0, 4.0]), accumulate=True),
    "rrelu_with_noise": lambda: dict(self=_randn(2, 5), noise=torch.zeros(2, 5), lower=0.1,
                                     upper=0.3, training=False),
    "_upsample_lanczos2d_aa": _lanczos_sample,
    "_upsample_lanczos2d_aa_backward": _lanczos_sample,
    "_add_relu.Tensor": lambda: dict(self=_randn(2, 5), other=_randn(2, 5), alpha=2),
    "_add_relu.Scalar": lambda: dict(self=_randn(2, 5), other=0.5, alpha=2),
    "max": lambda: dict(self=_randn(3, 4)),
    "min": lambda: dict(self=_randn(3, 4)),
    "_aminmax": lambda: dict(self=_randn(3, 4)),
    "_aminmax.dim": lambda: dict(self=_randn(3, 4), dim=1),
    "var.correction": lambda: dict(self=_randn(3, 4), dim=[1], correction=1),
    "std.correction": lambda: dict(self=_randn(3, 4), dim=[1], correction=1),
    "batch_norm_update_stats": lambda: dict(input=_randn(2, 3, 4), running_mean=torch.zeros(3),
                                            running_var=torch.ones(3), momentum=0.1),
    "logspace": lambda: dict(start=-2.0, end=2.0, steps=5, base=10.0),
    "logit": lambda: dict(self=torch.tensor([0.0, 0.25, 0.5, 0.9, 1.0]), eps=1e-6),
    "channel_shuffle": lambda: dict(self=_randn(1, 4, 2, 2), groups=2),
    "narrow_copy": lambda: dict(self=_randn(3, 4), dim=1, start=1, length=2),
    "_adaptive_avg_pool3d": lambda: dict(self=_randn(1, 2, 4, 4, 4), output_size=[2, 2, 2]),
    "_adaptive_avg_pool3d_backward": lambda: dict(grad_output=_randn(1, 2, 2, 2, 2),
                                                  self=_randn(1, 2, 4, 4, 4)),
    "adaptive_max_pool3d": lambda: dict(self=_randn(1, 2, 4, 4, 4), output_size=[2, 2, 2]),
    "adaptive_max_pool3d_backward": _max_pool3d_sample,
    "_pdist_forward": _pdist_sample,
    "_pdist_backward": _pdist_sample,
    "multi_margin_loss": lambda: dict(self=_randn(3, 4), target=torch.tensor([0, 3, 1])),
    "multi_margin_loss_backward": lambda: dict(grad_output=torch.tensor(1.0), self=_randn(3, 4),
                                               target=torch.tensor([0, 3, 1]), p=1, margin=1.0),
    "multilabel_margin_loss_forward": _multilabel_sample,
    "multilabel_margin_loss_backward": _multilabel_sample,
    "mode": lambda: dict(self=torch.tensor([[1.0, 2.0, 2.0, 3.0], [4.0, 4.0, 1.0, 1.0]]), dim=-1),
    "embedding_renorm": lambda: dict(self=_randn(5, 3) * 3, indices=torch.tensor([0, 2, 2]),
                                     max_norm=1.0, norm_type=2.0),
    "_fused_adagrad": lambda: _adagrad_sample(tensor_lr=False),
    "_fused_adagrad.tensor_lr": lambda: _adagrad_sample(tensor_lr=True),
    "glu_jvp": _glu_sample,
    "glu_backward_jvp": _glu_sample,
    "_masked_softmax": _masked_softmax_sample,
    "_masked_softmax_backward": _masked_softmax_sample,
    "segment_reduce": _segment_sample,
    "_segment_reduce_backward": _segment_sample,
    "fractional_max_pool2d": lambda: _fractional_sample(2),
    "fractional_max_pool2d_backward": lambda: _fractional_sample(2),
    "fractional_max_pool3d": lambda: _fractional_sample(3),
    "fractional_max_pool3d_backward": lambda: _fractional_sample(3),
}


# --- overloads and their schemas --------------------------------------------------


def schema(overload: str):
    """The FunctionSchema of "name.overload" ("name" for the default overload)."""
    name, _, overload_name = overload.partition(".")
    return getattr(getattr(aten, name), overload_name or "default")._schema


def packet(overload: str):
    name, _, overload_name = overload.partition(".")
    return getattr(getattr(aten, name), overload_name or "default")


def written(argument) -> bool:
    return argument.alias_info is not None and argument.alias_info.is_write


def _overloads_named(name: str) -> list:
    """Every overload of aten::name, as "name" or "name.overload"."""
    packet_ = getattr(aten, name, None)
    if packet_ is None:
        return []
    return [name if o == "default" else f"{name}.{o}" for o in packet_.overloads()]


def functional_sibling(overload: str) -> str:
    """The overload whose sample feeds `overload`: itself when it is in
    SAMPLES, else the sample overload of the same operator family (name with
    or without its leading and trailing underscore) whose arguments are
    `overload`'s inputs (same names and types), any extra ones defaulted."""
    if overload in SAMPLES:
        return overload
    target = schema(overload)
    base = overload.partition(".")[0]
    names = {base, base.rstrip("_"), base.lstrip("_"), "_" + base, "_" + base.rstrip("_")}
    inputs = {a.name: str(a.type) for a in target.arguments if not _is_output(a, target)}
    for name in sorted(names):
        for candidate in _overloads_named(name):
            if candidate not in SAMPLES:
                continue
            args = {a.name: (str(a.type), a.has_default_value()) for a in schema(candidate).arguments}
            if all(args.get(n, (None,))[0] == t for n, t in inputs.items()) and all(
                    default for n, (_, default) in args.items() if n not in inputs):
                return candidate
    raise LookupError(f"mps_ops.samples: no sample feeds {overload}: add its functional form to SAMPLES")


def _is_output(argument, schema_) -> bool:
    """A written-to argument that only receives results (out=, grad_input=,
    indices=), as opposed to an input updated in place (self, noise)."""
    return written(argument) and argument.kwarg_only


@dataclass
class Call:
    """One call of an aten overload: keyword arguments by schema name; which
    of them are outputs (fresh tensors shaped like the reference result) and
    which are inputs written in place."""

    overload: str
    kwargs: dict
    outputs: list = field(default_factory=list)
    inplace: list = field(default_factory=list)

    def run(self, kwargs=None):
        return packet(self.overload)(**(self.kwargs if kwargs is None else kwargs))


def _flat_results(result) -> list:
    if isinstance(result, torch.Tensor):
        return [result]
    flat = []
    for r in result:
        flat.extend(_flat_results(r) if isinstance(r, (tuple, list)) else [r])
    return flat


def sample_kwargs(overload: str) -> dict:
    """SAMPLES[overload]'s arguments that its schema names (a sample may
    serve a family: forward and backward share one)."""
    names = {a.name for a in schema(overload).arguments}
    return {k: v for k, v in SAMPLES[overload]().items() if k in names}


def call_for(overload: str) -> Call:
    """A CPU call of `overload` built from its sibling's sample: the sample's
    inputs, and for each output argument an empty tensor of the dtype the
    sibling's CPU result has (resized by the op, as users' out= tensors are)."""
    sibling = functional_sibling(overload)
    sample = sample_kwargs(sibling)
    target = schema(overload)
    kwargs, outputs, inplace = {}, [], []
    for a in target.arguments:
        if _is_output(a, target):
            outputs.append(a.name)
        elif a.name in sample:
            kwargs[a.name] = sample[a.name]
            if written(a):
                inplace.append(a.name)
    if outputs:
        reference = _flat_results(packet(sibling)(**sample))
        for name, result in zip(outputs, reference):
            kwargs[name] = torch.empty(0, dtype=result.dtype)
    return Call(overload, kwargs, outputs, inplace)
