"""Samples of the ops whose stub is csrc/operations/fractional_max_pool.mm."""

from __future__ import annotations

import torch

from . import empty, INDEX, Sample, SAMPLES as RANDOM_SAMPLES


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
    samples_role = {"random_samples": RANDOM_SAMPLES}
    return [
        Sample(name, forward, samples_role),
        Sample(f"{name}.output", lambda dt: dict(forward(dt), output=empty(dt), indices=empty(torch.long)),
               samples_role),
        Sample(f"{name}_backward", backward, {"indices": INDEX}),
        Sample(f"{name}_backward.grad_input", lambda dt: dict(backward(dt), grad_input=empty(dt)),
               {"indices": INDEX}),
    ]


OVERLOAD_SAMPLES = [
    *_fractional(2), *_fractional(3),
]
