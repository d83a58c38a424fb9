"""Error inputs of our own for registry ops whose OpInfo has none (or whose
checks it leaves out): bad sizes, counts, names and parameters passed as
plain arguments, each against the CPU's exception type. (Bad tensors are
test_bad_inputs.py's; bad index values test_index_checks.py's.)"""

from __future__ import annotations

import pytest
import torch

from helpers import run_on_kernels

aten = torch.ops.aten


# Made inside each call, so that run_on_kernels makes them on the test device.
def x2d():
    return torch.randn(2, 3, 7, 6)


def x3d():
    return torch.randn(2, 3, 5, 7, 6)


ERROR_INPUTS = {
    # fractional pooling: the CPU's shape checks
    "fractional2d pool too large": lambda: aten.fractional_max_pool2d(x2d(), [5, 2], [4, 3], torch.rand(2, 3, 2)),
    "fractional2d output too large": lambda: aten.fractional_max_pool2d(x2d(), [2, 2], [7, 3], torch.rand(2, 3, 2)),
    "fractional2d one kernel size": lambda: aten.fractional_max_pool2d(x2d(), [2], [3, 3], torch.rand(2, 3, 2)),
    "fractional2d three output sizes": lambda: aten.fractional_max_pool2d(x2d(), [2, 2], [3, 3, 3], torch.rand(2, 3, 2)),
    "fractional2d negative output": lambda: aten.fractional_max_pool2d(x2d(), [2, 2], [-1, 3], torch.rand(2, 3, 2)),
    "fractional2d 2-D input": lambda: aten.fractional_max_pool2d(x2d()[0, 0], [2, 2], [3, 3], torch.rand(1, 1, 2)),
    "fractional2d empty plane": lambda: aten.fractional_max_pool2d(x2d()[:, :, :0], [2, 2], [3, 3], torch.rand(2, 3, 2)),
    "fractional3d pool reaches the end": lambda: aten.fractional_max_pool3d(x3d(), [2, 2, 2], [4, 3, 3],
                                                                             torch.rand(2, 3, 3)),
    "fractional3d two kernel sizes": lambda: aten.fractional_max_pool3d(x3d(), [2, 2], [3, 3, 3], torch.rand(2, 3, 3)),
    "fractional3d samples of 2": lambda: aten.fractional_max_pool3d(x3d(), [2, 2, 2], [3, 3, 3], torch.rand(2, 3, 2)),
    "fractional2d backward output size": lambda: aten.fractional_max_pool2d_backward(
        torch.randn(2, 3, 3, 3), x2d(), [2, 2], [3, 4], torch.zeros(2, 3, 3, 3, dtype=torch.long)),
    # adaptive pooling
    "adaptive avg negative size": lambda: aten._adaptive_avg_pool3d(x3d(), [-1, 2, 2]),
    "adaptive avg two sizes": lambda: aten._adaptive_avg_pool3d(x3d(), [2, 2]),
    "adaptive max negative size": lambda: aten.adaptive_max_pool3d(x3d(), [2, -2, 2]),
    "adaptive max 3-D input": lambda: aten.adaptive_max_pool3d(x3d()[0, 0], [2, 2, 2]),
    "adaptive max empty plane": lambda: aten.adaptive_max_pool3d(x3d()[:, :, :, :0], [2, 2, 2]),
    # lanczos
    "lanczos one output size": lambda: aten._upsample_lanczos2d_aa(x2d(), [3], False),
    "lanczos zero output size": lambda: aten._upsample_lanczos2d_aa(x2d(), [0, 3], False),
    "lanczos 3-D input": lambda: aten._upsample_lanczos2d_aa(x2d()[0], [3, 3], False),
    "lanczos backward input size": lambda: aten._upsample_lanczos2d_aa_backward(torch.randn(2, 3, 3, 3), [3, 3],
                                                                                [2, 3, 7], False),
    "lanczos backward grad shape": lambda: aten._upsample_lanczos2d_aa_backward(torch.randn(2, 3, 3, 4), [3, 3],
                                                                                [2, 3, 7, 6], False),
    # losses
    "multi margin p 3": lambda: aten.multi_margin_loss(torch.randn(4, 5), torch.zeros(4, dtype=torch.long), 3, 1.0,
                                                       None, 1),
    "multi margin weight size": lambda: aten.multi_margin_loss(torch.randn(4, 5), torch.zeros(4, dtype=torch.long), 1,
                                                               1.0, torch.ones(4), 1),
    "multi margin 3-D input": lambda: aten.multi_margin_loss(torch.randn(2, 4, 5), torch.zeros(2, dtype=torch.long),
                                                             1, 1.0, None, 1),
    "multilabel target shape": lambda: aten.multilabel_margin_loss_forward(torch.randn(3, 5),
                                                                           torch.zeros(3, 4, dtype=torch.long), 1),
    # segment_reduce
    "segment unknown reduction": lambda: torch.segment_reduce(torch.randn(6), "median", lengths=torch.tensor([6])),
    "segment axis past lengths": lambda: torch.segment_reduce(torch.randn(6, 2), "sum", lengths=torch.tensor([6]),
                                                              axis=1),
    "segment axis out of range": lambda: torch.segment_reduce(torch.randn(6), "sum", lengths=torch.tensor([6]),
                                                              axis=3),
    "segment no lengths or offsets": lambda: torch.segment_reduce(torch.randn(6), "sum"),
    "segment indices": lambda: torch.segment_reduce(torch.randn(6), "sum", lengths=torch.tensor([6]),
                                                    indices=torch.tensor([0])),
    "segment empty offsets": lambda: torch.segment_reduce(torch.randn(6), "sum", offsets=torch.tensor([], dtype=torch.long)),
    # the rest
    "logspace negative steps": lambda: torch.logspace(0, 1, -2, out=torch.empty(0)),
    "masked softmax dim": lambda: aten._masked_softmax(torch.randn(2, 3), torch.ones(2, 3, dtype=torch.bool), 2),
    "masked softmax mask shape": lambda: aten._masked_softmax(torch.randn(2, 3), torch.ones(3, 2, dtype=torch.bool), 1),
    "masked softmax backward mask": lambda: aten._masked_softmax_backward(torch.randn(2, 3), torch.rand(2, 3),
                                                                          torch.ones(2, 2, dtype=torch.bool), 1),
    "embedding renorm 1-D weight": lambda: torch.embedding_renorm_(torch.randn(5), torch.tensor([0]), 1.0, 2.0),
    "embedding renorm float indices": lambda: torch.embedding_renorm_(torch.randn(5, 2), torch.tensor([0.0]), 1.0, 2.0),
    "adagrad list lengths": lambda: torch._fused_adagrad_([torch.randn(3)], [], [torch.randn(3)], [torch.tensor(1.0)],
                                                          lr=0.1, lr_decay=0.0, weight_decay=0.0, eps=1e-10,
                                                          maximize=False),
    "adagrad two steps": lambda: torch._fused_adagrad_([torch.randn(3)], [torch.randn(3)], [torch.rand(3)],
                                                       [torch.tensor([1.0, 2.0])], lr=0.1, lr_decay=0.0,
                                                       weight_decay=0.0, eps=1e-10, maximize=False),
    "adagrad half grad_scale": lambda: torch._fused_adagrad_([torch.randn(3)], [torch.randn(3)], [torch.rand(3)],
                                                             [torch.tensor(1.0)], lr=0.1, lr_decay=0.0,
                                                             weight_decay=0.0, eps=1e-10, maximize=False,
                                                             grad_scale=torch.tensor(2.0).half()),
    "rrelu noise shape": lambda: aten.rrelu_with_noise(torch.randn(3, 4), torch.zeros(4, 3), 0.1, 0.3, False),
    "glu_jvp short x": lambda: aten.glu_jvp(torch.randn(3, 2), torch.randn(3, 3), torch.randn(3, 4), 1),
    "glu_jvp dim": lambda: aten.glu_jvp(torch.randn(3, 2), torch.randn(3, 4), torch.randn(3, 4), 2),
    "frexp integer input": lambda: torch.frexp(torch.arange(3)),
    "heaviside mixed dtypes": lambda: torch.heaviside(torch.randn(3), torch.ones(3, dtype=torch.float16)),
    "batch_norm stats 1-D input": lambda: torch.batch_norm_update_stats(torch.randn(3), None, None, 0.1),
    "batch_norm stats empty input": lambda: torch.batch_norm_update_stats(torch.randn(0, 3), None, None, 0.1),
    "aminmax of nothing": lambda: torch._aminmax(torch.randn(0)),
    "aminmax empty dim": lambda: torch._aminmax(torch.randn(2, 0), 1),
    "mode empty dim": lambda: torch.mode(torch.randn(2, 0), 1),
    "var repeated dim": lambda: torch.var(torch.randn(2, 3), (0, 0), out=torch.empty(0)),
    "channel_shuffle 2-D": lambda: torch.nn.functional.channel_shuffle(torch.randn(4, 4), 2),
}


@pytest.mark.parametrize("name", list(ERROR_INPUTS))
def test_error_input_raises_what_the_cpu_raises(name):
    call = ERROR_INPUTS[name]
    with pytest.raises(Exception) as cpu_error:
        call()
    with pytest.raises(Exception) as ours:
        run_on_kernels(call)
    assert type(ours.value) is type(cpu_error.value), (ours.value, cpu_error.value)
