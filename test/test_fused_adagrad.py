"""torch.optim.Adagrad(fused=True) on our _fused_adagrad_ kernels against the
CPU's fused Adagrad, over several steps: weight decay, lr decay, maximize,
a tensor lr, grad scaling with found_inf (a skipped step), half/bfloat16
parameters, several parameter tensors of different shapes."""

from __future__ import annotations

import pytest
import torch

import mps_ops
from helpers import assert_matches, to_cpu, to_device
from mps_ops.testing import device, emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_fused_adagrad_"}

# torch.optim checks the device before any op runs: fused Adagrad takes MPS
# (and CPU: the emulator) but refuses CUDA tensors, so the optimizer tests
# cannot reach our kernels on the CUDA backend; the op itself is called
# directly below and in test_bad_inputs.py there.
optimizer_reaches_our_kernels = pytest.mark.skipif(
    device() == "cuda", reason="torch.optim's fused Adagrad refuses CUDA tensors")


def _run(params, grads_per_step, on_kernels, **options):
    params = [p.clone().requires_grad_() for p in params]
    if on_kernels:
        params = [to_device(p.detach()).requires_grad_() for p in params]
    optimizer = torch.optim.Adagrad(params, fused=True, **options)
    dispatches = 0
    for grads in grads_per_step:
        for p, g in zip(params, grads):
            p.grad = to_device(g.clone()) if on_kernels else g.clone()
        if on_kernels:
            with mps_ops.profile() as prof, emulate():
                optimizer.step()
            dispatches += len(prof.dispatches)
        else:
            optimizer.step()
    state = [optimizer.state[p]["sum"] for p in params]
    return [to_cpu(p.detach()) for p in params], [to_cpu(s) for s in state], dispatches


OPTIONS = {
    "plain": dict(lr=0.1),
    "decays": dict(lr=0.05, lr_decay=0.1, weight_decay=0.01, eps=1e-6),
    "maximize": dict(lr=0.1, maximize=True, initial_accumulator_value=0.5),
    "tensor_lr": dict(lr=torch.tensor(0.07)),
}


@optimizer_reaches_our_kernels
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", list(OPTIONS))
def test_fused_adagrad_matches_the_cpu(name, dtype):
    torch.manual_seed(0)
    params = [torch.randn(7, 5).to(dtype), torch.randn(13).to(dtype), torch.randn(()).to(dtype)]
    steps = [[torch.randn(p.shape).to(dtype) for p in params] for _ in range(3)]
    expected = _run(params, steps, False, **OPTIONS[name])
    actual = _run(params, steps, True, **OPTIONS[name])
    assert_matches(actual[0], expected[0])
    assert_matches(actual[1], expected[1])
    assert actual[2] == 3 * len(params)


def test_grad_scale_and_found_inf():
    params = [torch.randn(4, 3), torch.randn(6)]
    grads = [torch.randn(4, 3) * 8, torch.randn(6) * 8]
    for found_inf in (0.0, 1.0):
        results = []
        for on_kernels in (False, True):
            ps, gs, sums = (to_device(t) if on_kernels else t for t in
                            ([p.clone() for p in params], [g.clone() for g in grads],
                             [torch.full_like(p, 0.1) for p in params]))
            steps = [torch.tensor(2.0), torch.tensor(2.0)]
            scale, inf = torch.tensor(8.0), torch.tensor(found_inf)
            call = lambda: torch._fused_adagrad_(  # noqa: E731
                ps, gs, sums, steps, lr=0.1, lr_decay=0.0, weight_decay=0.01, eps=1e-10,
                maximize=False, grad_scale=scale, found_inf=inf)
            if on_kernels:
                with emulate():
                    call()
            else:
                call()
            results.append([to_cpu(t) for t in ps + gs + sums])
        assert_matches(results[1], results[0])


def test_mismatched_lists_raise():
    p = [torch.randn(3)]
    with pytest.raises(RuntimeError):
        with emulate():
            torch._fused_adagrad_(p, [], [torch.zeros(3)], [torch.tensor(1.0)], lr=0.1, lr_decay=0.0,
                                  weight_decay=0.0, eps=1e-10, maximize=False)
