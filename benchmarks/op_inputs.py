"""The benchmarks' inputs: per registry op, its call and CPU tensors for
each layout at a given size (OpSpec). Element-wise ops take theirs from the
one sample table, mps_ops.samples (shaped ops from their registry domains);
the other ops with a benchmark state their layouts here (WITH_OWN_INPUTS).
An op with neither is listed, unmeasured, in the work table."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

import mps_ops
from mps_ops.samples import elementwise_ops


@dataclass(frozen=True)
class OpSpec:
    fn: object  # the public call
    makers: tuple  # one per tensor input: (shape, dtype) -> CPU tensor
    kind: str = "elementwise"
    inplace: object = None  # the in-place method, if the op has one
    inputs: object = None  # (layout, rows, cols, dtype) -> CPU tensors, replacing makers
    dtype: torch.dtype = torch.float32  # the work table's dtype (integer-only ops: an integer one)
    record: str = ""  # the registry entry, where the key is one of its overloads, not an entry


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


def _pixel_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """A (2, 4, H, W) batch of about 2 * rows * cols elements (H and W even,
    so that both pixel_shuffle and pixel_unshuffle take it by 2)."""
    height, width = max(2, rows // 8 * 2), max(2, cols // 2 * 2)
    if layout == "dense":
        return [torch.randn(2, 4, height, width).to(dtype)]
    if layout == "transposed":
        return [torch.randn(2, 4, width, height).to(dtype).transpose(2, 3)]
    if layout == "strided":
        return [torch.randn(2, 4, height, 2 * width).to(dtype)[..., ::2]]
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


def _pool2d_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """A (2, 12, rows, cols) batch of feature maps (the 3-D pools' volume),
    pooled to half its size: sizes that divide, where the stock MPS kernel
    works too, so the repair must match it there."""
    if layout == "dense":
        return [torch.randn(2, 12, rows, cols).to(dtype)]
    if layout == "transposed":
        return [torch.randn(2, 12, cols, rows).to(dtype).transpose(2, 3)]
    if layout == "strided":
        return [torch.randn(2, 12, rows, 2 * cols).to(dtype)[:, :, :, ::2]]
    raise ValueError(layout)


def half_size_2d(x):
    return tuple(max(1, s // 2) for s in x.shape[-2:])


def _two_row_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """Two (rows, cols) operands (a gradient and a forward result), each its own."""
    return [_reduction_inputs(layout, rows, cols, dtype)[0], _reduction_inputs(layout, rows, cols, dtype)[0]]


def _probability_pair(layout: str, rows: int, cols: int, dtype) -> list:
    """binary_cross_entropy's probabilities and targets, (rows, cols) each."""
    return [t.sigmoid() for t in _two_row_inputs(layout, rows, cols, dtype)]


def _with_one_gradient(make):
    """A reduced loss's backward inputs: one incoming gradient, then the forward's."""
    return lambda layout, rows, cols, dtype: [torch.ones(()).to(dtype), *make(layout, rows, cols, dtype)]


def _layer_norm_backward_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """A transformer's layer_norm backward: (rows, cols) gradient and input,
    the forward's mean and rstd, a weight and a bias of cols."""
    grad, x = _two_row_inputs(layout, rows, cols, dtype)
    weight, bias = torch.randn(cols).to(dtype), torch.randn(cols).to(dtype)
    _, mean, rstd = torch.native_layer_norm(x, [cols], weight, bias, 1e-5)
    return [grad, x, mean, rstd, weight, bias]


def _group_norm_backward_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """A diffusion UNet's GroupNorm backward: the rows x cols elements as
    (N, 128, 32, 32) in 32 groups, the forward's statistics, a weight of 128."""
    x = torch.randn(max(1, rows * cols // (128 * 32 * 32)), 128, 32, 32).to(dtype)
    weight = torch.randn(128).to(dtype)
    _, mean, rstd = torch.native_group_norm(x, weight, None, x.shape[0], 128, 32 * 32, 32, 1e-5)
    return [torch.randn_like(x), x, mean, rstd, weight]


def _cdist_backward_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """cdist's backward between the first three quarters of the rows and the
    last quarter (in the given layout): grad, x1, x2 and the distances. (x2
    of fewer rows than x1: bench_gpu's accuracy check cuts the operands
    sized by x1's rows, grad, x1 and cdist, and leaves x2 whole.)"""
    x = _reduction_inputs(layout, rows, cols, dtype)[0]
    x1, x2 = x[: rows * 3 // 4], x[rows * 3 // 4:]
    dist = torch.cdist(x1.float(), x2.float(), compute_mode="donot_use_mm_for_euclid_dist").to(dtype)
    return [torch.randn(dist.shape).to(dtype), x1, x2, dist]


def _grid_sampler_backward_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """A spatial transformer's grid_sample backward: the rows x cols elements
    as (N, 16, 128, 128) images sampled at 128 x 128 points of an identity
    grid jittered by a pixel (bilinear, zeros padding): grad_output, input
    and grid."""
    n = max(1, rows * cols // (16 * 128 * 128))
    x = torch.randn(n, 16, 128, 128).to(dtype)
    line = torch.linspace(-1.0, 1.0, 128)
    identity = torch.stack(torch.meshgrid(line, line, indexing="xy"), -1).expand(n, 128, 128, 2)
    grid = (identity + (torch.rand(n, 128, 128, 2) - 0.5) / 64).to(dtype)
    return [torch.randn(n, 16, 128, 128).to(dtype), x, grid]


def _grid_sampler_3d_backward_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """A volumetric spatial transformer's (or registration network's)
    grid_sample backward: the rows x cols elements as (N, 8, 32, 64, 64)
    volumes sampled at 32 x 64 x 64 points of an identity grid jittered by
    a voxel (trilinear, zeros padding): grad_output, input and grid."""
    n = max(1, rows * cols // (8 * 32 * 64 * 64))
    x = torch.randn(n, 8, 32, 64, 64).to(dtype)
    depth, line = torch.linspace(-1.0, 1.0, 32), torch.linspace(-1.0, 1.0, 64)
    identity = torch.stack(torch.meshgrid(depth, line, line, indexing="ij"), -1).flip(-1).expand(n, 32, 64, 64, 3)
    grid = (identity + (torch.rand(n, 32, 64, 64, 3) - 0.5) / 32).to(dtype)
    return [torch.randn(n, 8, 32, 64, 64).to(dtype), x, grid]


# A speech recogniser's CTC loss: 1024 time steps of 1024 classes (a BPE
# vocabulary), targets of 200 labels, every entry at full length.
CTC_TIME, CTC_CLASSES, CTC_TARGET = 1024, 1024, 200


def _ctc_inputs(backward: bool):
    """The rows x cols elements as log_probs (time, batch, classes) and
    padded targets; for the backward also a gradient and the forward's loss
    and log_alpha (the CPU's)."""
    def make(layout: str, rows: int, cols: int, dtype) -> list:
        batch = max(1, rows * cols // (CTC_TIME * CTC_CLASSES))
        log_probs = torch.randn(CTC_TIME, batch, CTC_CLASSES).log_softmax(2).to(dtype)
        targets = torch.randint(1, CTC_CLASSES, (batch, CTC_TARGET))
        if not backward:
            return [log_probs, targets]
        nll, log_alpha = torch.ops.aten._ctc_loss(log_probs, targets, [CTC_TIME] * batch, [CTC_TARGET] * batch)
        return [torch.ones(batch, dtype=dtype), log_probs, targets, nll, log_alpha]
    return make


def _ctc_lengths(log_probs, targets) -> tuple:
    return [log_probs.size(0)] * log_probs.size(1), [targets.size(1)] * log_probs.size(1)


def _aa_gradient(elements: int, dtype) -> list:
    """grad_output (the elements as (N, 16, 128, 128)) of an antialiased
    resize of (N, 16, 256, 256) inputs to half their size."""
    return [torch.randn(max(1, elements // (16 * 128 * 128)), 16, 128, 128).to(dtype)]


def _aa_input_size(grad) -> list:
    return [grad.size(0), grad.size(1), 2 * grad.size(2), 2 * grad.size(3)]


def _batch_norm_inputs(channels_last: bool):
    """A CNN's batch_norm: the rows x cols elements as (N, 64, 32, 32),
    contiguous or channels-last, and the weight, bias and running
    statistics of 64 channels."""
    def make(layout: str, rows: int, cols: int, dtype) -> list:
        x = torch.randn(max(1, rows * cols // (64 * 32 * 32)), 64, 32, 32).to(dtype)
        if channels_last:
            x = x.to(memory_format=torch.channels_last)
        return [x, torch.randn(64).to(dtype), torch.randn(64).to(dtype), torch.randn(64).to(dtype),
                torch.rand(64).to(dtype) + 0.5]
    return make


def _batch_norm_backward_inputs(channels_last: bool):
    """The backward of _batch_norm_inputs' training forward: a gradient in
    the input's layout, the input, the weight, the saved statistics."""
    def make(layout: str, rows: int, cols: int, dtype) -> list:
        x, weight, bias, running_mean, running_var = _batch_norm_inputs(channels_last)(layout, rows, cols, dtype)
        _, mean, invstd = torch.ops.aten.native_batch_norm(x, weight, bias, running_mean, running_var, True, 0.1,
                                                           1e-5)
        return [torch.randn_like(x), x, weight, mean, invstd]
    return make


# 2-D pooling's windows as CNNs use them: ResNet's 3 x 3, stride 2, padded
# max pool, and a 2 x 2, stride 2 average pool.
MAX_POOL2D_WINDOW = dict(kernel_size=[3, 3], stride=[2, 2], padding=[1, 1], dilation=[1, 1], ceil_mode=False)
AVG_POOL2D_WINDOW = dict(kernel_size=[2, 2], stride=[2, 2], padding=[0, 0], ceil_mode=False,
                         count_include_pad=True, divisor_override=None)


def _pool2d_backward_inputs(with_indices: bool):
    """A CNN's pooling backward: the rows x cols elements as (N, 64, 32, 32),
    contiguous ("dense"), channels-last ("transposed") or contiguous with a
    strided gradient ("strided"); the gradient of the pooled output, the
    input and (max pooling) the forward's indices."""
    def make(layout: str, rows: int, cols: int, dtype) -> list:
        x = torch.randn(max(1, rows * cols // (64 * 32 * 32)), 64, 32, 32).to(dtype)
        if layout == "transposed":
            x = x.to(memory_format=torch.channels_last)
        if with_indices:
            out, indices = torch.ops.aten.max_pool2d_with_indices(x.float(), **MAX_POOL2D_WINDOW)
        else:
            out, indices = torch.ops.aten.avg_pool2d(x.float(), **AVG_POOL2D_WINDOW), None
        memory_format = torch.channels_last if layout == "transposed" else torch.contiguous_format
        grad = torch.randn(out.shape).to(dtype).contiguous(memory_format=memory_format)
        if layout == "strided":
            grad = torch.cat([grad, grad], -1)[..., ::2]
        return [grad, x] + ([indices.contiguous(memory_format=memory_format)] if with_indices else [])
    return make


def _weight_norm_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """A linear layer's weight (rows, cols) normalized per row (dim 0): v
    and g of (rows, 1)."""
    return [torch.randn(rows, cols).to(dtype), torch.randn(rows, 1).to(dtype)]


def _weight_norm_backward_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    v, g = _weight_norm_inputs(layout, rows, cols, dtype)
    _, norms = torch.ops.aten._weight_norm_interface(v, g, 0)
    return [torch.randn_like(v), v, g, norms]


def _nll_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """(rows, cols) log-probabilities in the given layout and one class
    target per row."""
    return [_reduction_inputs(layout, rows, cols, dtype)[0], torch.randint(0, cols, (rows,))]


def _nll2d_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """Segmentation-shaped scores, 16 classes of 256-wide maps (the same
    element count as rows x cols), and one target per pixel."""
    height = rows * cols // (4 * 16 * 256)
    x = _reduction_inputs(layout, 4 * 16 * height, 256, dtype)[0].reshape(4, 16, height, 256)
    return [x, torch.randint(0, 16, (4, height, 256))]


def _with_total_weight(inputs: list) -> list:
    """A backward's inputs: the forward's and its total_weight (no weights,
    nothing ignored: the target count)."""
    x, target = inputs
    return [x, target, torch.tensor(float(target.numel()), dtype=x.dtype)]


def _nll_backward(x, target, total_weight):
    backward = torch.ops.aten.nll_loss2d_backward if x.dim() == 4 else torch.ops.aten.nll_loss_backward
    return backward(torch.ones((), dtype=x.dtype, device=x.device), x, target, None, 1, -100, total_weight)


def _loss_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """(rows, cols) scores in the given layout and rows of class targets:
    one class each (multi_margin) or a list ended by -1 (multilabel)."""
    scores = _reduction_inputs(layout, rows, cols, dtype)[0]
    labels = torch.randint(0, cols, (rows, cols))
    labels[:, cols // 2] = -1
    return [scores, labels]


def _one_class_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """Scores and one class per row (multi_margin): only what the op reads,
    so that bytes to move count no unread label columns."""
    scores, labels = _loss_inputs(layout, rows, cols, dtype)
    return [scores, labels[:, 0].contiguous()]


def _multi_margin_backward(x, y):
    return torch.ops.aten.multi_margin_loss_backward(torch.ones((), dtype=x.dtype, device=x.device), x, y, 1, 1.0)


def _multilabel_backward(x, y):
    loss, is_target = torch.ops.aten.multilabel_margin_loss_forward(x, y, 1)
    return torch.ops.aten.multilabel_margin_loss_backward(torch.ones((), dtype=x.dtype, device=x.device), x, y, 1,
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


def _fill_target(layout: str, rows: int, cols: int, dtype) -> list:
    """The tensor an in-place random fill writes (its values unread)."""
    return [torch.empty(rows, cols, dtype=dtype)]


# A nested jagged tensor's padded form: items of 48 to 64 rows of `cols`
# elements (none cut), padded to 64 rows. The lengths follow a pattern, so
# the jagged rows are known without reading a tensor (the size checks build
# inputs on the meta device).
JAGGED_ROWS = 64


def _jagged_lengths(rows: int) -> list:
    """Lengths of at least `rows` jagged rows in all (each item at least 48)."""
    shortest = JAGGED_ROWS * 3 // 4
    return [shortest + b % (JAGGED_ROWS // 4 + 1) for b in range(-(-rows // shortest))]


def _offsets_of(lengths: list) -> torch.Tensor:
    return torch.cat([torch.zeros(1, dtype=torch.long), torch.tensor(lengths).cumsum(0)])


def _jagged_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """The jagged side: about `rows` rows of `cols`, and the items' offsets."""
    lengths = _jagged_lengths(rows)
    return [torch.randn(sum(lengths), cols).to(dtype), _offsets_of(lengths)]


def _padded_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """The padded side of _jagged_inputs, and the same offsets."""
    lengths = _jagged_lengths(rows)
    return [torch.randn(len(lengths), JAGGED_ROWS, cols).to(dtype), _offsets_of(lengths)]


def _concentrations_and_draws(n: int):
    """Concentrations of 0.05 to 30 and positive draws of their scale
    (alpha times an exponential draw: meta-device ops, which the case
    listing evaluates, where the Gamma sampler has no meta kernel)."""
    alpha = torch.exp(torch.empty(n).uniform_(math.log(0.05), math.log(30.0)))
    return alpha, alpha * -torch.rand(n).log()


def _gamma_gradient_inputs(rows: int, cols: int, dtype) -> list:
    alpha, draws = _concentrations_and_draws(rows * cols)
    return [alpha.reshape(rows, cols).to(dtype), draws.reshape(rows, cols).to(dtype)]


def _dirichlet_gradient_inputs(rows: int, cols: int, dtype) -> list:
    alpha, draws = (t.reshape(-1, 8) for t in _concentrations_and_draws(rows * cols))
    shares, total = draws / draws.sum(-1, keepdim=True), alpha.sum(-1, keepdim=True).expand_as(alpha)
    return [t.reshape(rows, cols).to(dtype) for t in (shares, alpha, total)]


def _fake_quantize_inputs(qparams):
    """Activations in a layout (scaled to spread over an 8-bit grid of scale
    0.05, both mask values), then qparams(cols): the op's other tensors."""
    def inputs(layout: str, rows: int, cols: int, dtype) -> list:
        return [(_reduction_inputs(layout, rows, cols, torch.float32)[0] * 5).to(dtype), *qparams(cols)]
    return inputs


# The tensor-qparams form's scale, zero point and switch (the dtypes torch's
# CUDA kernel reads: float32, int32, int64); per channel, along dim 1.
_PER_TENSOR_QPARAMS = (lambda cols: [torch.tensor([0.05]), torch.tensor([3], dtype=torch.int32),
                                     torch.tensor([1])])
_PER_CHANNEL_QPARAMS = (lambda cols: [torch.rand(cols) * 0.05 + 0.01, torch.randint(-5, 6, (cols,), dtype=torch.int32)])


def _fused_fake_quantize_inputs(layout: str, rows: int, cols: int, dtype) -> list:
    """The fused observer's input and state in the steady state (running
    extremes at the input's, which the moving average then keeps), so every
    timed call computes the same result; its switches as torch's CUDA kernel
    reads them (int64), scale and zero point float32 and int32."""
    x = _fake_quantize_inputs(lambda cols: [])(layout, rows, cols, dtype)[0]
    return [x, torch.tensor([1]), torch.tensor([1]), x.min().reshape(1).float(), x.max().reshape(1).float(),
            torch.ones(1), torch.zeros(1, dtype=torch.int32)]


# Ops with stubs of their own that are not element-wise: each one's inputs per
# layout (its `inputs`) and the call timed. Element-wise ops come from
# mps_ops.samples (elementwise_specs below).
WITH_OWN_INPUTS = {
    "take": OpSpec(torch.take, (), kind="gather", inputs=_take_inputs),
    "put_": OpSpec(lambda x, i: x.put_(i, torch.ones(i.shape, dtype=x.dtype, device=x.device), accumulate=True),
                   (), kind="scatter", inputs=_take_inputs),
    # A graph network's pooling: messages of `rows` edges onto rows / 4 nodes.
    "index_reduce": OpSpec(lambda s, i, x: torch.index_reduce(s, 0, i, x, "mean"), (), kind="scatter",
                           inputs=lambda layout, rows, cols, dtype: [
                               torch.randn(rows // 4, cols).to(dtype), torch.randint(0, rows // 4, (rows,)),
                               torch.randn(rows, cols).to(dtype)]),
    "max": OpSpec(_into_new_out(torch.max), (), kind="reduction", inputs=_reduction_inputs),
    "min": OpSpec(_into_new_out(torch.min), (), kind="reduction", inputs=_reduction_inputs),
    "_aminmax": OpSpec(lambda x: torch._aminmax(x, -1), (), kind="reduction",
                       inputs=_reduction_inputs),
    "batch_norm_update_stats": OpSpec(
        lambda x: torch.batch_norm_update_stats(x, None, None, 0.1), (), kind="reduction",
        inputs=_reduction_inputs),
    "logit_": OpSpec(torch.logit, (lambda shape, dtype: torch.rand(shape).to(dtype),), kind="inplace_only",
                     inplace=lambda x: x.logit_(1e-6)),
    "channel_shuffle": OpSpec(lambda x: torch.nn.functional.channel_shuffle(x, 2) if x.size(1) % 2 == 0
                              else torch.nn.functional.channel_shuffle(x, 1), (), kind="view_copy",
                              inputs=_view_copy_inputs),
    "narrow_copy": OpSpec(_into_new_out(lambda x, out: torch.narrow_copy(x, 1, 0, x.size(1) // 2, out=out)),
                          (), kind="view_copy", inputs=_view_copy_inputs),
    # A batch repeated twice along its rows (the result twice the input).
    "repeat": OpSpec(lambda x: x.repeat(1, 2, 1), (), kind="view_copy", inputs=_view_copy_inputs),
    "pixel_shuffle": OpSpec(lambda x: torch.nn.functional.pixel_shuffle(x, 2), (), kind="view_copy",
                            inputs=_pixel_inputs),
    "pixel_unshuffle": OpSpec(lambda x: torch.nn.functional.pixel_unshuffle(x, 2), (), kind="view_copy",
                              inputs=_pixel_inputs),
    "_adaptive_avg_pool2d": OpSpec(lambda x: torch.nn.functional.adaptive_avg_pool2d(x, half_size_2d(x)),
                                   (), kind="pool", inputs=_pool2d_inputs),
    "_adaptive_avg_pool3d": OpSpec(lambda x: torch.nn.functional.adaptive_avg_pool3d(x, _half_size(x)),
                                   (), kind="pool", inputs=_pool_inputs),
    "adaptive_max_pool3d": OpSpec(lambda x: torch.nn.functional.adaptive_max_pool3d(x, _half_size(x)),
                                  (), kind="pool", inputs=_pool_inputs),
    "_pdist_forward": OpSpec(torch.pdist, (), kind="reduction", inputs=_reduction_inputs),
    "_pdist_backward": OpSpec(lambda x: torch.ops.aten._pdist_backward(
        torch.ones(x.size(0) * (x.size(0) - 1) // 2, dtype=x.dtype, device=x.device), x.contiguous(), 2.0,
        torch.pdist(x)), (), kind="reduction", inputs=_reduction_inputs),
    "_cdist_backward": OpSpec(lambda g, a, b, d: torch.ops.aten._cdist_backward(g, a, b, 2.0, d), (),
                              kind="reduction", inputs=_cdist_backward_inputs),
    "grid_sampler_2d_backward": OpSpec(
        lambda g, x, grid: torch.ops.aten.grid_sampler_2d_backward(g, x, grid, 0, 0, False, [True, True]), (),
        kind="scatter", inputs=_grid_sampler_backward_inputs),
    # A mask's coordinates in a compiled program: half the elements
    # nonzero, the first quarter of the elements' worth of rows kept.
    "nonzero_static": OpSpec(lambda x: torch.nonzero_static(x, size=x.numel() // 4), (), kind="scatter",
                             inputs=lambda layout, rows, cols, dtype: [
                                 (torch.randn(rows, cols) * (torch.rand(rows, cols) < 0.5)).to(dtype)]),
    "_jagged_to_padded_dense_forward": OpSpec(
        lambda v, o: torch.ops.aten._jagged_to_padded_dense_forward(v, [o], [JAGGED_ROWS], 0.0), (), kind="scatter",
        inputs=_jagged_inputs),
    # total_L not given: both read the last offset on the host.
    "_padded_dense_to_jagged_forward": OpSpec(
        lambda d, o: torch.ops.aten._padded_dense_to_jagged_forward(d, [o]), (), kind="scatter",
        inputs=_padded_inputs),
    "grid_sampler_3d_backward": OpSpec(
        lambda g, x, grid: torch.ops.aten.grid_sampler_3d_backward(g, x, grid, 0, 0, False, [True, True]), (),
        kind="scatter", inputs=_grid_sampler_3d_backward_inputs),
    "_ctc_loss": OpSpec(lambda lp, tg: torch.ops.aten._ctc_loss(lp, tg, *_ctc_lengths(lp, tg)), (), kind="loss",
                        inputs=_ctc_inputs(backward=False)),
    "_ctc_loss_backward": OpSpec(lambda g, lp, tg, nll, alpha: torch.ops.aten._ctc_loss_backward(
        g, lp, tg, *_ctc_lengths(lp, tg), nll, alpha, 0), (), kind="loss", inputs=_ctc_inputs(backward=True)),
    "multi_margin_loss": OpSpec(torch.nn.functional.multi_margin_loss, (), kind="loss",
                                inputs=_one_class_inputs),
    "multi_margin_loss_backward": OpSpec(_multi_margin_backward, (), kind="loss", inputs=_one_class_inputs,
                                         record="multi_margin_loss"),
    "multilabel_margin_loss_forward": OpSpec(torch.nn.functional.multilabel_margin_loss, (),
                                             kind="loss", inputs=_loss_inputs),
    "multilabel_margin_loss_backward": OpSpec(_multilabel_backward, (), kind="loss",
                                              inputs=_loss_inputs),
    "mode": OpSpec(lambda x: torch.mode(x.round(), -1), (), kind="reduction", inputs=_reduction_inputs),
    "hash_tensor": OpSpec(lambda x: torch.hash_tensor(x, [-1]), (), kind="reduction", inputs=_reduction_inputs),
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
    "_softmax": OpSpec(lambda x: torch.ops.aten._softmax(x, -1, False), (), kind="reduction",
                       inputs=_reduction_inputs),
    "_log_softmax": OpSpec(lambda x: torch.ops.aten._log_softmax(x, -1, False), (), kind="reduction",
                           inputs=_reduction_inputs),
    # The mean over rows, as cross_entropy calls them.
    "nll_loss_forward": OpSpec(lambda x, t: torch.ops.aten.nll_loss_forward(x, t, None, 1, -100)[0], (),
                               kind="loss", inputs=_nll_inputs),
    "nll_loss_backward": OpSpec(_nll_backward, (), kind="loss",
                                inputs=lambda *a: _with_total_weight(_nll_inputs(*a))),
    "nll_loss2d_forward": OpSpec(lambda x, t: torch.ops.aten.nll_loss2d_forward(x, t, None, 1, -100)[0], (),
                                 kind="loss", inputs=_nll2d_inputs),
    "nll_loss2d_backward": OpSpec(_nll_backward, (), kind="loss",
                                  inputs=lambda *a: _with_total_weight(_nll2d_inputs(*a))),
    "native_layer_norm_backward": OpSpec(
        lambda g, x, m, r, w, b: torch.ops.aten.native_layer_norm_backward(g, x, [x.shape[-1]], m, r, w, b,
                                                                           [True, True, True]),
        (), kind="normalization", inputs=_layer_norm_backward_inputs),
    "native_group_norm_backward": OpSpec(
        lambda g, x, m, r, w: torch.ops.aten.native_group_norm_backward(g, x, m, r, w, x.shape[0], x.shape[1],
                                                                        x[0, 0].numel(), 32, [True, True, True]),
        (), kind="normalization", inputs=_group_norm_backward_inputs),
    # batch_norm as a CNN's training step calls it (forward with the running
    # statistics' update, backward), contiguous and channels-last, and in
    # evaluation.
    "native_batch_norm": OpSpec(
        lambda x, w, b, rm, rv: torch.ops.aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5), (),
        kind="normalization", inputs=_batch_norm_inputs(False)),
    "_batch_norm_with_update": OpSpec(
        lambda x, w, b, rm, rv: torch.ops.aten._batch_norm_with_update(x, w, b, rm, rv, 0.1, 1e-5), (),
        kind="normalization", inputs=_batch_norm_inputs(True)),
    "_native_batch_norm_legit": OpSpec(
        lambda x, w, b, rm, rv: torch.ops.aten._native_batch_norm_legit(x, w, b, rm, rv, False, 0.1, 1e-5), (),
        kind="normalization", inputs=_batch_norm_inputs(False)),
    "native_batch_norm_backward": OpSpec(
        lambda g, x, w, m, s: torch.ops.aten.native_batch_norm_backward(g, x, w, None, None, m, s, True, 1e-5,
                                                                        [True, True, True]),
        (), kind="normalization", inputs=_batch_norm_backward_inputs(False)),
    "batch_norm_backward": OpSpec(
        lambda g, x, w, m, s: torch.ops.aten.batch_norm_backward(g, x, w, None, None, m, s, True, 1e-5,
                                                                 [True, True, True], torch.empty(0, device=x.device,
                                                                                                 dtype=torch.uint8)),
        (), kind="normalization", inputs=_batch_norm_backward_inputs(True)),
    "_weight_norm_interface": OpSpec(lambda v, g: torch.ops.aten._weight_norm_interface(v, g, 0), (),
                                     kind="normalization", inputs=_weight_norm_inputs),
    "_weight_norm_interface_backward": OpSpec(
        lambda gw, v, g, n: torch.ops.aten._weight_norm_interface_backward(gw, v, g, n, 0), (),
        kind="normalization", inputs=_weight_norm_backward_inputs),
    "max_pool2d_with_indices_backward": OpSpec(
        lambda g, x, i: torch.ops.aten.max_pool2d_with_indices_backward(g, x, indices=i, **MAX_POOL2D_WINDOW), (),
        kind="pool", inputs=_pool2d_backward_inputs(True)),
    "avg_pool2d_backward": OpSpec(lambda g, x: torch.ops.aten.avg_pool2d_backward(g, x, **AVG_POOL2D_WINDOW), (),
                                  kind="pool", inputs=_pool2d_backward_inputs(False)),
    # The point-wise losses as training calls them: the mean, and its backward.
    "mse_loss": OpSpec(lambda x, y: torch.ops.aten.mse_loss(x, y, 1), (), kind="loss", inputs=_two_row_inputs),
    "mse_loss_backward": OpSpec(lambda g, x, y: torch.ops.aten.mse_loss_backward(g, x, y, 1), (), kind="loss",
                                inputs=_with_one_gradient(_two_row_inputs)),
    "smooth_l1_loss": OpSpec(lambda x, y: torch.ops.aten.smooth_l1_loss(x, y, 1, 1.0), (), kind="loss",
                             inputs=_two_row_inputs),
    "smooth_l1_loss_backward": OpSpec(lambda g, x, y: torch.ops.aten.smooth_l1_loss_backward(g, x, y, 1, 1.0), (),
                                      kind="loss", inputs=_with_one_gradient(_two_row_inputs)),
    "huber_loss": OpSpec(lambda x, y: torch.ops.aten.huber_loss(x, y, 1, 1.0), (), kind="loss",
                         inputs=_two_row_inputs),
    "huber_loss_backward": OpSpec(lambda g, x, y: torch.ops.aten.huber_loss_backward(g, x, y, 1, 1.0), (),
                                  kind="loss", inputs=_with_one_gradient(_two_row_inputs)),
    "binary_cross_entropy": OpSpec(lambda x, y: torch.ops.aten.binary_cross_entropy(x, y, None, 1), (),
                                   kind="loss", inputs=_probability_pair),
    "binary_cross_entropy_backward": OpSpec(
        lambda g, x, y: torch.ops.aten.binary_cross_entropy_backward(g, x, y, None, 1), (), kind="loss",
        inputs=_with_one_gradient(_probability_pair)),
    "_softmax_backward_data": OpSpec(lambda g, y: torch.ops.aten._softmax_backward_data(g, y, -1, g.dtype), (),
                                     kind="reduction", inputs=_two_row_inputs),
    "_log_softmax_backward_data": OpSpec(
        lambda g, y: torch.ops.aten._log_softmax_backward_data(g, y, -1, g.dtype), (), kind="reduction",
        inputs=_two_row_inputs),
    # PReLU as layers call it: one slope per channel (a column here), broadcast.
    "_prelu_kernel": OpSpec(torch._prelu_kernel, (), kind="activation",
                            inputs=lambda layout, rows, cols, dtype: [_reduction_inputs(layout, rows, cols, dtype)[0],
                                                                      torch.rand(1, cols).to(dtype)]),
    "_prelu_kernel_backward": OpSpec(
        torch.ops.aten._prelu_kernel_backward, (), kind="activation",
        inputs=lambda layout, rows, cols, dtype: [*_two_row_inputs(layout, rows, cols, dtype),
                                                  torch.rand(1, cols).to(dtype)]),
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
    # The gradient of an antialiased 2x downsample of (N, 16, 256, 256) images.
    "_upsample_bilinear2d_aa_backward": OpSpec(
        lambda g: torch.ops.aten._upsample_bilinear2d_aa_backward(g, g.shape[2:], _aa_input_size(g), False), (),
        kind="scatter", inputs=lambda layout, rows, cols, dtype: _aa_gradient(rows * cols, dtype)),
    "_upsample_bicubic2d_aa_backward": OpSpec(
        lambda g: torch.ops.aten._upsample_bicubic2d_aa_backward(g, g.shape[2:], _aa_input_size(g), False), (),
        kind="scatter", inputs=lambda layout, rows, cols, dtype: _aa_gradient(rows * cols, dtype)),
    # Rates of 0 to 40 (both of the sampler's algorithms, the switch at 10).
    "poisson": OpSpec(torch.poisson, (), kind="activation",
                      inputs=lambda layout, rows, cols, dtype: [(torch.rand(rows, cols) * 40).to(dtype)]),
    # Counts of 0 to 60 at probabilities on (0, 1): both of the sampler's
    # algorithms (the switch at count * min(p, 1 - p) = 10), failures counted
    # above 1/2.
    "binomial": OpSpec(torch.binomial, (), kind="activation",
                       inputs=lambda layout, rows, cols, dtype: [torch.randint(0, 61, (rows, cols)).to(dtype),
                                                                 torch.rand(rows, cols).to(dtype)]),
    # Alphas of 0.05 to 4: both sides of the Gamma sampler's boost at 1
    # (Dirichlet's rows: the 1024 columns).
    "_standard_gamma": OpSpec(torch._standard_gamma, (), kind="activation",
                              inputs=lambda layout, rows, cols, dtype: [(torch.rand(rows, cols) * 4 + 0.05).to(dtype)]),
    "_sample_dirichlet": OpSpec(torch._sample_dirichlet, (), kind="activation",
                                inputs=lambda layout, rows, cols, dtype: [(torch.rand(rows, cols) * 4 + 0.05).to(dtype)]),
    # Concentrations of 0.05 to 30 and draws of their scale (every branch of
    # the gradients), as rsample's backward passes them; Dirichlet's in rows
    # of 8.
    "_standard_gamma_grad": OpSpec(torch._standard_gamma_grad, (), kind="activation",
                                   inputs=lambda layout, rows, cols, dtype: _gamma_gradient_inputs(rows, cols, dtype)),
    "_dirichlet_grad": OpSpec(torch._dirichlet_grad, (), kind="activation",
                              inputs=lambda layout, rows, cols, dtype: _dirichlet_gradient_inputs(rows, cols, dtype)),
    # The in-place random fills: write-only.
    "cauchy_": OpSpec(lambda t: t.cauchy_(), (), kind="activation", inputs=_fill_target),
    "log_normal_": OpSpec(lambda t: t.log_normal_(), (), kind="activation", inputs=_fill_target),
    "geometric_": OpSpec(lambda t: t.geometric_(0.3), (), kind="activation", inputs=_fill_target),
    "rrelu_with_noise": OpSpec(
        lambda x: torch.ops.aten.rrelu_with_noise(x, torch.empty(x.shape, dtype=x.dtype, device=x.device), 0.1, 0.3,
                                                  True), (), kind="activation", inputs=_reduction_inputs),
    "logspace": OpSpec(lambda out: torch.logspace(-3.0, 3.0, out.numel(), 10.0, out=out), (), kind="factory",
                       inputs=lambda layout, rows, cols, dtype: [torch.empty(rows * cols, dtype=dtype)]),
    "fake_quantize_per_tensor_affine_cachemask": OpSpec(
        lambda x: torch.ops.aten.fake_quantize_per_tensor_affine_cachemask(x, 0.05, 3, -128, 127), (),
        kind="activation", inputs=_fake_quantize_inputs(lambda cols: [])),
    "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams": OpSpec(
        lambda x, s, z, e: torch.ops.aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(x, s, z, e, 0, 255),
        (), kind="activation", inputs=_fake_quantize_inputs(_PER_TENSOR_QPARAMS)),
    "fake_quantize_per_channel_affine_cachemask": OpSpec(
        lambda x, s, z: torch.ops.aten.fake_quantize_per_channel_affine_cachemask(x, s, z, 1, -128, 127), (),
        kind="activation", inputs=_fake_quantize_inputs(_PER_CHANNEL_QPARAMS)),
    "_fake_quantize_learnable_per_tensor_affine": OpSpec(
        lambda x, s, z: torch.ops.aten._fake_quantize_learnable_per_tensor_affine(x, s, z, -128, 127, 1.0), (),
        kind="activation", inputs=_fake_quantize_inputs(lambda cols: [torch.tensor([0.05]), torch.tensor([2.7])])),
    "_fake_quantize_learnable_per_tensor_affine_backward": OpSpec(
        lambda x, g, s, z: torch.ops.aten._fake_quantize_learnable_per_tensor_affine_backward(
            g, x, s, z, -128, 127, 1.0), (),
        kind="activation", inputs=lambda layout, rows, cols, dtype: [
            *_fake_quantize_inputs(lambda cols: [])(layout, rows, cols, dtype), torch.randn(rows, cols).to(dtype),
            torch.tensor([0.05]), torch.tensor([2.7])]),
    "_fused_moving_avg_obs_fq_helper": OpSpec(
        lambda x, o, f, low, high, s, z: torch.ops.aten._fused_moving_avg_obs_fq_helper(
            x, o, f, low, high, s, z, 0.01, -128, 127, 0, False, False), (),
        kind="activation", inputs=_fused_fake_quantize_inputs),
    "var": OpSpec(_into_new_out(torch.var, dim=-1), (), kind="reduction", inputs=_reduction_inputs),
    "std": OpSpec(_into_new_out(torch.std, dim=-1), (), kind="reduction", inputs=_reduction_inputs),
}


def _at(make):
    """A samples maker (shape -> tensor) at any dtype; a bool maker's tensor
    is a mask (where's condition) and stays bool."""
    def made(shape, dtype):
        t = make(shape)
        return t if t.dtype == torch.bool else t.to(dtype)
    return made


def elementwise_specs() -> dict:
    return {name: OpSpec(e.fn, tuple(_at(m) for m in e.makers), inplace=e.inplace, dtype=e.dtype)
            for name, e in elementwise_ops().items()}


OPS = {**elementwise_specs(), **WITH_OWN_INPUTS}


def registry_ops() -> dict:
    """short name -> OpRecord, in registry order."""
    return {r.name.split("::", 1)[1]: r for r in mps_ops.ops()}


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
