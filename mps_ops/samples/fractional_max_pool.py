"""Samples of the ops whose stub is csrc/operations/fractional_max_pool.mm."""

from __future__ import annotations

import torch

from . import empty, INDEX, Sample, SAMPLES as RANDOM_SAMPLES


def _fractional(rank):
    kernel = [2] * rank

    def forward(dt, large=False):
        # large (Sample.large): 4 x 8 planes of 24**rank or 12**rank outputs.
        shape, size = ((4, 8), 24 if rank == 2 else 12) if large else ((2, 3), 3)
        spatial = (7, 6) if rank == 2 else (5, 7, 6)
        return dict(self=torch.randn(*shape, *(s * size // 3 for s in spatial)).to(dt), kernel_size=kernel,
                    output_size=[size] * rank, random_samples=torch.rand(*shape, rank).to(dt))

    def backward(dt, large=False):
        args = forward(dt, large)
        op = getattr(torch.ops.aten, f"fractional_max_pool{rank}d")
        output = args["output_size"]
        _, indices = op(args["self"].float(), kernel, output, args["random_samples"].float())
        return dict(grad_output=torch.randn(indices.shape).to(dt), self=args["self"], kernel_size=kernel,
                    output_size=output, indices=indices)

    name = f"fractional_max_pool{rank}d"
    samples_role = {"random_samples": RANDOM_SAMPLES}
    return [
        Sample(name, forward, samples_role, large=lambda dt: forward(dt, large=True)),
        Sample(f"{name}.output", lambda dt: dict(forward(dt), output=empty(dt), indices=empty(torch.long)),
               samples_role),
        Sample(f"{name}_backward", backward, {"indices": INDEX}, large=lambda dt: backward(dt, large=True)),
        Sample(f"{name}_backward.grad_input", lambda dt: dict(backward(dt), grad_input=empty(dt)),
               {"indices": INDEX}),
    ]


OVERLOAD_SAMPLES = [
    *_fractional(2), *_fractional(3),
]
