"""Every registry overload on inputs it may not expect: each tensor argument
in turn (and all of them at once) in another dtype (index dtypes included),
another rank (0-dim, flattened, an extra dim, 17 dims), another shape
(shorter, longer, empty) and another layout (transposed, strided, expanded).
Where the CPU raises, ours must raise the same exception type; where the CPU
succeeds, ours must too, with equal results and arguments."""

from __future__ import annotations

import re

import pytest
import torch

from helpers import (assert_matches, ctc_arguments_valid, ctc_lengths, ctc_lengths_integral, ldl_pivots_unchecked_by_cpu,
                     run_on_kernels, to_cpu, to_device)
from mps_ops.testing import emulate
from mps_ops.samples import DATA, cpu_dtype, samples, written_names
from sweep import assert_same_outcome, run, to_float64

# float64 is left out: Metal has none, and every op refuses it (TypeError)
# where the CPU computes it (test_layouts.py tests the refusal).
DTYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint16,
          torch.float16, torch.bfloat16, torch.float32, torch.complex64)
MANY_DIMS = 17  # one more than any fixed-size dim table in our stubs


def _shape_mutations(t):
    """(label, new tensor) for one tensor: ranks, shapes and layouts."""
    yield "unsqueezed", t.unsqueeze(0)
    yield "trailing dim", t.unsqueeze(-1)
    if t.dim() != 1:
        yield "flattened", t.reshape(-1)
    if t.dim() > 0 and t.numel() > 0:
        yield "0-dim", t.reshape(-1)[0].clone()
    if t.dim() > 0:
        yield "empty dim 0", t.narrow(0, 0, 0)
        yield "empty last dim", t.narrow(-1, 0, 0)
        yield "doubled dim 0", torch.cat([t, t], 0)
        if t.size(-1) > 1:
            yield "short last dim", t.narrow(-1, 0, t.size(-1) - 1)
        if t.size(0) > 1:
            yield "short dim 0", t.narrow(0, 0, t.size(0) - 1)
    if t.dim() < MANY_DIMS:
        yield f"{MANY_DIMS} dims (trailing 1s)", t.reshape(tuple(t.shape) + (1,) * (MANY_DIMS - t.dim()))
        yield f"{MANY_DIMS} dims (leading 1s)", t.reshape((1,) * (MANY_DIMS - t.dim()) + tuple(t.shape))
    yield from _layouts(t)


def _layouts(t):
    """Other layouts: the same values transposed or strided, and the first
    element expanded to the whole shape (a stride-0 view)."""
    if t.dim() >= 2:
        yield "transposed", t.mT.contiguous().mT
    if t.dim() >= 1 and t.numel() > 0:
        wide = torch.zeros(tuple(t.shape[:-1]) + (2 * t.size(-1),), dtype=t.dtype)
        wide[..., ::2] = t
        yield "strided", wide[..., ::2]
        yield "expanded", t.reshape(-1)[0].expand(t.shape)


def _mutations(t, written=False):
    """Written-to arguments get no expanded layout: the in-place overlap
    checks are the output checks' business (one shared helper)."""
    for dtype in DTYPES:
        if dtype != t.dtype:
            yield f"dtype {dtype}", t.to(dtype)
    for label, mutated in _shape_mutations(t):
        if not (written and label == "expanded"):
            yield label, mutated


def _follow_dtype(args, outs, old, new):
    """Outs of the first input's (or self's) old dtype take its new one: the
    call a user makes. (Outs of another dtype are the out= checks' business.)"""
    for name in outs:
        if isinstance(args.get(name), torch.Tensor) and args[name].dtype == old:
            args[name] = args[name].to(new)


def _cases(sample, dtype):
    """(label, args, the mutated dtype or None) for every mutation of one call."""
    outs = sample.out_names()
    written = written_names(sample)
    base = sample.call(dtype)
    names = [n for n, v in base.items() if n not in outs and (isinstance(v, torch.Tensor) or (
        isinstance(v, list) and v and isinstance(v[0], torch.Tensor)))]
    for name in names:
        value = base[name]
        is_list = isinstance(value, list)
        original = value[0] if is_list else value
        for i, label in enumerate(label for label, _ in _mutations(original, name in written)):
            # Mutated from a fresh build: views must not share memory with
            # another case's tensors (in-place ops would leak between cases).
            fresh = sample.call(dtype)
            own = fresh[name][0] if is_list else fresh[name]
            mutated = list(_mutations(own, name in written))[i][1]
            fresh[name] = [mutated, *fresh[name][1:]] if is_list else mutated
            changed = mutated.dtype if mutated.dtype != original.dtype else None
            if changed is not None and name in (names[0], "self"):
                _follow_dtype(fresh, outs, original.dtype, changed)
            yield f"{name}: {label}", fresh, (name, changed)
        if is_list:
            fresh = sample.call(dtype)
            fresh[name] = fresh[name] + [fresh[name][0].clone()]
            yield f"{name}: one more tensor", fresh, (name, None)
    # Every tensor argument at once (tensor lists: their first tensor).
    for label, _ in _mutations(torch.zeros(2, 3)):
        fresh = sample.call(dtype)
        changed = None
        for name in names:
            value = fresh[name]
            target = value[0] if isinstance(value, list) else value
            found = dict(_mutations(target, name in written)).get(label)
            if found is None:
                break
            if found.dtype != target.dtype:
                changed = found.dtype
                _follow_dtype(fresh, outs, target.dtype, found.dtype)
            if isinstance(value, list):
                value[0] = found
            else:
                fresh[name] = found
        else:
            yield f"all: {label}", fresh, ("all", changed)


# Where the CPU has no answer to compare with, ours must raise RuntimeError
# (the CPU's error type for a bad argument) or, where marked "either", may
# also succeed (the call is well defined there).
CPU_HAS_NO_ANSWER = {
    # The CPU's index_reduce out= path over an expanded source internal-asserts
    # in its iterator (Loops.h: "iter.ninputs() == traits::arity").
    "index_reduce.out|source: expanded": "either",
    "index_reduce.out|all: expanded": "either",
    # The CPU crashes (segfault, abort or division by zero).
    "_adaptive_avg_pool3d_backward|self: empty last dim": "raises",
    "_adaptive_avg_pool2d_backward|self: empty last dim": "raises",
    "adaptive_avg_pool3d_backward.grad_input|self: empty last dim": "raises",
    "adaptive_max_pool3d_backward|self: doubled dim 0": "raises",
    "adaptive_max_pool3d_backward.grad_input|self: doubled dim 0": "raises",
    "_pdist_backward|self: empty dim 0": "raises",
    "_pdist_backward|all: empty dim 0": "either",
    "_fused_adagrad_|self: doubled dim 0": "raises",
    "_fused_adagrad_.tensor_lr|self: doubled dim 0": "raises",
    "_masked_softmax|all: empty last dim": "either",
    "_masked_softmax_backward|all: empty last dim": "either",
    "_segment_reduce_backward|output: unsqueezed": "raises",
    "_segment_reduce_backward|output: 17 dims (leading 1s)": "raises",
    "_segment_reduce_backward|offsets: unsqueezed": "raises",
    # int64 operands: beta truncated to 0, then an integer division by it.
    "smooth_l1_loss_backward.grad_input|all: dtype torch.int64": "raises",
    # A 0-dim loss (or gradient) written into the first element of an out=
    # of 15, the rest left as it was (the CPU writes through a squeezed view).
    "binary_cross_entropy.out|all: 0-dim": "raises",
    "binary_cross_entropy_backward.grad_input|all: 0-dim": "raises",
    # The CPU writes past the end of a buffer (glibc's malloc checker aborts;
    # unchecked, a later allocation crashes, as CI's did): running_mean
    # shorter than input's channels, a 0-dim state_sum stepped as param's
    # elements, ... (and CPU_WRITES_OUTSIDE's cases, found by rule below).
    "batch_norm_update_stats|input: unsqueezed": "raises",
    "_fused_adagrad_|state_sums: 0-dim": "raises",
    "adaptive_max_pool3d.out|all: short dim 0": "either",
    "rrelu_with_noise_|all: doubled dim 0": "either",
    "_fused_adagrad_.tensor_lr|self: dtype torch.float32": "raises",
    "_fused_adagrad_.tensor_lr|grads: dtype torch.int64": "raises",
    "_fused_adagrad_.tensor_lr|state_sums: 0-dim": "raises",
    "_fused_adagrad_.tensor_lr|state_steps: one more tensor": "raises",
    # An empty batch: the CPU's backward divides by its zero count.
    "native_batch_norm_backward|input: empty dim 0": "raises",
    "native_batch_norm_backward|all: empty dim 0": "either",
    "batch_norm_backward|input: empty dim 0": "raises",
    "batch_norm_backward|all: empty dim 0": "either",
    # v with no rows: the CPU's weight_norm divides by zero.
    "_weight_norm_interface|v: empty dim 0": "raises",
    "_weight_norm_interface|all: empty dim 0": "either",
    "_weight_norm_interface_backward|saved_v: empty dim 0": "raises",
    "_weight_norm_interface_backward|all: empty dim 0": "either",
    # An expanded g: the CPU's norms, written like g, corrupt the heap.
    "_weight_norm_interface|g: expanded": "either",
    "_weight_norm_interface|all: expanded": "either",
    # The CPU returns uninitialized memory (a mean over no samples) or a
    # 1-element result for 0-dim inputs.
    "multilabel_margin_loss_forward|all: empty dim 0": "either",
    "multilabel_margin_loss_forward.output|all: empty dim 0": "either",
    "_masked_softmax_backward|all: 0-dim": "either",
    # No channels: the CPU's range check of the integer zero points reduces
    # the empty zero_point and raises; the call itself is well defined.
    "fake_quantize_per_channel_affine_cachemask|all: empty last dim": "either",
    "_fake_quantize_learnable_per_channel_affine|all: empty last dim": "either",
    "_fake_quantize_learnable_per_channel_affine_backward|all: empty last dim": "either",
}

_SHAPES = r"(unsqueezed|trailing dim|flattened|0-dim|empty dim 0|empty last dim|doubled dim 0|short last dim" \
          r"|short dim 0|17 dims.*)"
# Arguments the CPU does not check: it reads past them, ignores part of
# them or reads them in another shape, and returns whatever that gives
# (running statistics and fused Adagrad state are even written that way).
# Where the CPU returns and ours raises RuntimeError, ours is right.
CPU_UNCHECKED = [
    (r"_?adaptive_(avg|max)_pool[23]d_backward.*", rf"(grad_output|self|indices|all): {_SHAPES}"),
    # An index outside its cell's window (the expanded index): the CPU
    # scatters it anyway; ours gathers from covering cells, so refuses it.
    (r"(adaptive_max_pool3d|max_pool2d_with_indices)_backward.*", r"(indices|all): expanded"),
    (r"fractional_max_pool[23]d_backward.*", rf"(grad_output|self|indices|all): {_SHAPES}"),
    (r"_fused_adagrad_.*", rf"(self|grads|state_sums): ({_SHAPES}|strided)"),
    (r"_pdist_(forward|backward)", rf"(grad|self|pdist|all): {_SHAPES}"),
    (r"_cdist_backward", rf"(grad|x1|x2|cdist|all): {_SHAPES}"),
    (r"grid_sampler_[23]d_backward", rf"grad_output: {_SHAPES}"),
    (r"_segment_reduce_backward", rf"(grad|output|data|offsets|all): {_SHAPES}"),
    (r"_masked_softmax_backward", rf"output: {_SHAPES}"),
    (r"multi_margin_loss_backward.*", r"grad_output: (empty dim 0|empty last dim|short last dim|short dim 0)"),
    (r"batch_norm_update_stats", rf"(input|running_mean|running_var|all): ({_SHAPES}|expanded)"),
    # Parameters and statistics of another length than the channels (and
    # running statistics written through an expanded view).
    (r"(native_batch_norm|_native_batch_norm_legit|_batch_norm_with_update).*",
     rf"(input|weight|bias|running_mean|running_var|all): ({_SHAPES}|expanded)"),
    (r"_weight_norm_interface(_backward)?", rf"(v|g|saved_v|saved_g|saved_norms|grad_w|all): {_SHAPES}"),
    (r"(native_)?batch_norm_backward", rf"(input|grad_out|weight|running_mean|running_var|save_mean|save_invstd|save_var|all): "
                                       rf"{_SHAPES}"),
]

# Where the CPU reads a non-contiguous argument in memory order instead of
# through its strides (its results are wrong), or refuses it where the op is
# defined for it (nll_loss2d_backward makes grad_input like a permuted self,
# then finds it non-contiguous): ours must equal the CPU's result for the
# same values made contiguous.
CPU_LAYOUT_BUGS = [
    (r"adaptive_max_pool3d_backward.*", r"(indices|all): (transposed|strided|expanded)"),
    (r"fractional_max_pool[23]d_backward.*", r"(indices|all): (transposed|strided|expanded)"),
    (r"_masked_softmax", r"(self|all): transposed"),
    (r"nll_loss2d_backward", r"(self|all): transposed"),
    # weight_norm's kernels read v and grad_w in memory order.
    (r"_weight_norm_interface", r"(v|all): (transposed|strided|expanded)"),
    (r"_weight_norm_interface_backward", r"grad_w: (transposed|strided|expanded)"),
    # torch 2.13's group_norm backward reads transposed operands in memory
    # order (float64 too).
    (r"native_group_norm_backward", r"(grad_out|input|mean|rstd|all): transposed"),
    # A strided or expanded 1-D (concatenated) targets tensor: the CPU reads
    # entry b's target from element offset x stride.
    (r"_ctc_loss.*", r"(targets|all): (strided|expanded)"),
    # batch_norm's out= overloads come out wrong for a transposed input
    # (float64 too).
    (r"(native_batch_norm|_native_batch_norm_legit|_batch_norm_with_update)\.(out|no_stats_out)",
     r"(input|all): transposed"),
]


# Backwards whose CPU kernel adds each gradient into grad_input at an index
# or offset it does not check against grad_input's size. Where such a write
# lands depends on the heap, so the malloc checker catches it only at times
# and otherwise a later test crashes (as on CI): the CPU has no answer there.
def _pool_backward_writes_outside(rank):
    """Max-pool backward: an index past self's plane, or more planes of
    indices than self has."""
    def writes_outside(args) -> bool:
        self, indices = args["self"], args["indices"]
        if indices.dtype != torch.long or indices.numel() == 0 or self.dim() <= rank or indices.dim() <= rank:
            return False  # the CPU refuses these before it writes
        return (self.shape[:-rank].numel() < indices.shape[:-rank].numel()
                or int(indices.max()) >= self.shape[-rank:].numel() or int(indices.min()) < 0)
    return writes_outside


def _avg_pool_backward_batch_differs(args) -> bool:
    """Average-pool backward: the CPU loops over grad_output's batch,
    unchecked against self's (past grad_input's end where it is longer)."""
    grad, self = args["grad_output"], args["self"]
    return grad.dim() == self.dim() == 4 and grad.size(0) != self.size(0)


def _adaptive_avg_pool2d_backward_leading_sizes_differ(args) -> bool:
    """Adaptive average pool 2-D backward: the CPU reads grad_output's batch
    and channels as self's, unchecked (past grad_output's end where it is
    shorter; a run aborted in glibc's allocator)."""
    grad, self = args["grad_output"], args["self"]
    if not isinstance(grad, torch.Tensor) or not isinstance(self, torch.Tensor):
        return False
    return grad.dim() == self.dim() and self.dim() in (3, 4) and grad.shape[:-2] != self.shape[:-2]


def _segment_backward_writes_outside(args) -> bool:
    """segment_reduce backward: an offset past data along axis, or rows of
    grad longer than data's."""
    data, offsets, grad, axis = args["data"], args["offsets"], args["grad"], args["axis"]
    if (offsets.is_floating_point() or offsets.is_complex() or offsets.dtype in (torch.bool, torch.uint16)
            or offsets.numel() == 0 or data.dim() <= axis or grad.dim() <= axis):
        return False  # the CPU refuses these before it writes
    return (int(offsets.max()) > data.size(axis) or int(offsets.min()) < 0
            or data.shape[axis + 1:].numel() < grad.shape[axis + 1:].numel())


def _softmax_backward_reads_outside(args) -> bool:
    """log_softmax's backward on the CPU reads output with grad_output's
    shape, unchecked (one crashed with a division by zero)."""
    return args["grad_output"].shape != args["output"].shape


def _layer_norm_sizes_unchecked(args) -> bool:
    """layer_norm's backward on the CPU reads grad_out, mean and rstd with
    the input's rows and columns, unchecked."""
    x, shape = args["input"], args["normalized_shape"]
    if not isinstance(x, torch.Tensor) or x.dim() < len(shape) or list(x.shape[x.dim() - len(shape):]) != list(shape):
        return False  # the CPU refuses these before it reads
    rows = x.shape[:x.dim() - len(shape)].numel()
    return (args["grad_out"].numel() != x.numel() or args["mean"].numel() != rows
            or args["rstd"].numel() != rows)


def _batch_norm_running_stats_short(args) -> bool:
    """batch_norm's training forward on the CPU updates running_mean and
    running_var through 1-dim accessors for every channel of the input,
    unchecked: past the end of shorter ones."""
    x = args["input"]
    if not isinstance(x, torch.Tensor) or x.dim() < 2 or not args.get("training", True):
        return False
    running = [args.get("running_mean"), args.get("running_var")]
    return any(isinstance(r, torch.Tensor) and r.dim() == 1 and r.numel() < x.size(1) for r in running)


def _weight_norm_g_short(args) -> bool:
    """weight_norm on the CPU writes a norm (and reads g) for every index of
    v along dim, unchecked: past the end of a shorter g."""
    v = args.get("v", args.get("saved_v"))
    g = args.get("g", args.get("saved_g"))
    dim = args["dim"]
    if not isinstance(v, torch.Tensor) or not isinstance(g, torch.Tensor) or v.dim() == 0:
        return False
    if dim not in (0, v.dim() - 1) or not v.is_floating_point():
        return False
    norms = args.get("saved_norms")
    return g.numel() < v.size(dim) or (isinstance(norms, torch.Tensor) and norms.numel() < v.size(dim))


def _ldl_solve_reaches_lapack(args) -> bool:
    """Whether the CPU's ldl_solve takes these arguments as far as LAPACK:
    LD a floating matrix, B of its dtype, integer pivots of LD's shape less
    its last dim (otherwise it refuses them first)."""
    ld, pivots, b = args["LD"], args["pivots"], args["B"]
    integer_pivots = not (pivots.is_floating_point() or pivots.is_complex() or pivots.dtype == torch.bool)
    return (ld.dim() >= 2 and (ld.is_floating_point() or ld.is_complex()) and b.dtype == ld.dtype and integer_pivots
            and tuple(pivots.shape) == tuple(ld.shape[:-1]))


def _ctc_reads_outside(args) -> bool:
    """_ctc_loss on the CPU reads a target outside [0, classes) unchecked
    (past log_probs), its backward writes there too (past the gradient),
    and the backward checks nothing of its lengths, targets and the
    forward's outputs ("assume that the forward did"): where ours refuses
    them, the CPU may crash."""
    lp, tg = args["log_probs"], args["targets"]
    backward = "log_alpha" in args
    if not (lp.dim() == 3 and lp.dtype in (torch.float32, torch.float64) and tg.dtype in (torch.long, torch.int32)
            and ctc_lengths_integral(args)) or (not backward and tg.dim() not in (1, 2)):
        return False  # the CPU refuses these first
    if backward and not all(t.dtype == lp.dtype and t.dim() == d for t, d in
                            ((args["grad"], 1), (args["neg_log_likelihood"], 1), (args["log_alpha"], 3))):
        return False  # the CPU's accessors refuse these first
    if not ctc_arguments_valid(args):
        return backward  # the forward refuses these as ours does
    labels = tg.contiguous().reshape(-1) if tg.dim() == 1 else tg[:, :max(ctc_lengths(args["target_lengths"]), default=0)]
    return bool(((labels < 0) | (labels >= lp.size(2))).any())


def _cholesky_solve_helper_unchecked(args) -> bool:
    """The CPU's _cholesky_solve_helper checks nothing (torch.cholesky_solve
    checks and broadcasts first): LAPACK's potrs reads and writes outside
    operands that are not n x n factors and n-row right-hand sides of the
    same batches and dtype (a segfault here)."""
    b, a = args["self"], args["A"]
    if b.dtype not in (torch.float32, torch.float64, torch.complex64, torch.complex128):
        return False  # the CPU refuses these first
    return not (a.dim() >= 2 and b.dim() >= 2 and a.size(-1) == a.size(-2) == b.size(-2)
                and a.shape[:-2] == b.shape[:-2] and a.dtype == b.dtype)


CPU_WRITES_OUTSIDE = {
    "_cholesky_solve_helper": _cholesky_solve_helper_unchecked,
    "_ctc_loss": _ctc_reads_outside,
    "_ctc_loss_backward": _ctc_reads_outside,
    "_weight_norm_interface": _weight_norm_g_short,
    "_weight_norm_interface_backward": _weight_norm_g_short,
    "native_batch_norm": _batch_norm_running_stats_short,
    "_native_batch_norm_legit": _batch_norm_running_stats_short,
    "_batch_norm_with_update": _batch_norm_running_stats_short,
    "native_layer_norm_backward": _layer_norm_sizes_unchecked,
    "_softmax_backward_data": _softmax_backward_reads_outside,
    "_log_softmax_backward_data": _softmax_backward_reads_outside,
    "adaptive_max_pool3d_backward": _pool_backward_writes_outside(3),
    "max_pool2d_with_indices_backward": _pool_backward_writes_outside(2),
    "avg_pool2d_backward": _avg_pool_backward_batch_differs,
    "_adaptive_avg_pool2d_backward": _adaptive_avg_pool2d_backward_leading_sizes_differ,
    "fractional_max_pool2d_backward": _pool_backward_writes_outside(2),
    "fractional_max_pool3d_backward": _pool_backward_writes_outside(3),
    "_segment_reduce_backward": _segment_backward_writes_outside,
    # Pivots of an unsigned dtype: LAPACK's negative pivots (2 x 2 blocks)
    # wrap, -3 to 253, rows past B. torch 2.12's CPU and later refuse them
    # as ours does; torch 2.11's hands them to LAPACK, whose row swaps then
    # read and write up to 256 KiB past B: on the H200 (torch 2.11) the
    # process crashed later, in another test's sample or at exit.
    "linalg_ldl_solve": lambda args: _ldl_solve_reaches_lapack(args) and ldl_pivots_unchecked_by_cpu(args["pivots"]),
}


def _cpu_writes_outside(overload, args) -> bool:
    writes_outside = CPU_WRITES_OUTSIDE.get(overload.split(".")[0])
    return writes_outside is not None and writes_outside(args)


# Calls the CPU refuses but ours takes, as the arguments other devices make
# (CUDA's layer_norm keeps a half input's mean and rstd in float): the
# CPU's answer for the arguments made acceptable to it is ours.
CPU_STRICTER = {
    (r"(native_)?batch_norm_backward", r"(save_mean|save_invstd|save_var): dtype torch\.float32"):
        lambda args: {k: v.to(args["input"].dtype) if k.startswith("save_") else v for k, v in args.items()},
    ("native_layer_norm_backward", r"(mean|rstd): dtype torch\.float32"):
        lambda args: dict(args, mean=args["mean"].to(args["input"].dtype), rstd=args["rstd"].to(args["input"].dtype)),
    # A bfloat16 scale passes the CPU's dtype check, then fails its kernel's
    # internal assert (its kernel takes float scales).
    (r"fake_quantize_per_channel_affine_cachemask|_fake_quantize_learnable_per_channel_affine",
     r"(scale|all): dtype torch\.bfloat16"):
        lambda args: dict(args, scale=args["scale"].float()),
}


# Calls where the CPU answers with a result of the wrong shape: its
# pixel_unshuffle returns an empty input's clone. The reference there is what
# torch's meta kernel (the op's definition, as the composite CUDA runs) makes.
CPU_MISSHAPEN = {("pixel_unshuffle", r".*: empty .*")}

# Calls whose CPU error type depends on the CPU's algorithm, which it picks
# by size: isin's sort path (many test elements for few elements) joins a
# Python number with wide unsigned test elements by cat, which refuses the
# promotion (RuntimeError); its scan path refuses the dtype
# (NotImplementedError), as ours does. Both must raise.
CPU_ERROR_BY_SIZE = {(r"isin\.Scalar_Tensor(_out)?", r"(test_elements|all): dtype torch\.uint(16|32|64)")}


def _meta_result(op, args):
    """op's result laid out by its meta kernel, as an empty CPU tensor (the
    calls of CPU_MISSHAPEN make no elements)."""
    on_meta = {k: v.to("meta") if isinstance(v, torch.Tensor) else v for k, v in args.items()}
    shaped = op(**on_meta)
    return torch.empty_strided(shaped.shape, shaped.stride(), dtype=shaped.dtype)


def _cpu_stricter(overload, label):
    return next((fix for (o, a), fix in CPU_STRICTER.items() if re.fullmatch(o, overload) and re.fullmatch(a, label)),
                None)


def _listed(table, overload, label) -> bool:
    return any(re.fullmatch(o, overload) and re.fullmatch(a, label) for o, a in table)


def _dtype_difference_allowed(cpu, ours, changed, record) -> bool:
    """Dtypes the registry does not list for the op: ours refuses them
    (NotImplementedError; float64 TypeError) where the CPU computes them, and
    refuses complex (Metal has none) before the CPU's other checks. Dtypes
    the registry lists but the CPU lacks: ours computes them, or raises what
    the op raises for its other arguments, where the CPU raises
    NotImplementedError."""
    if changed is None:
        return False
    if isinstance(ours.error, (NotImplementedError, TypeError)) and changed not in record.dtypes:
        return cpu.error is None or changed.is_complex
    return isinstance(cpu.error, NotImplementedError) and changed in record.dtypes


def _contiguous(args):
    return {k: v.contiguous() if isinstance(v, torch.Tensor) else v for k, v in args.items()}


CASES = [pytest.param(sample, record, id=sample.overload) for sample, record in samples()]


@pytest.mark.parametrize("sample, record", CASES)
def test_bad_inputs_raise_what_the_cpu_raises(sample, record):
    dtype = cpu_dtype(sample, record)
    failures = []
    # Built twice: each side gets its own in-place arguments, in the same layouts.
    cases = zip(_cases(sample, dtype), _cases(sample, dtype))
    n = 0
    for (label, cpu_args, (_, changed)), (_, our_args, _) in cases:
        n += 1
        where = f"{sample.overload} {label}"
        ours = run(sample.op, our_args, ours=True)
        no_answer = CPU_HAS_NO_ANSWER.get(f"{sample.overload}|{label}")
        if no_answer is None and _cpu_writes_outside(sample.overload, cpu_args):
            no_answer = "raises"
        if no_answer is not None:
            if not (isinstance(ours.error, RuntimeError) or (no_answer == "either" and ours.error is None)):
                failures.append(f"{where}: the CPU has no answer; ours must raise RuntimeError, got {ours.error!r}")
            continue
        layout_bug = _listed(CPU_LAYOUT_BUGS, sample.overload, label)
        if layout_bug:
            cpu_args = _contiguous(cpu_args)
        cpu = run(sample.op, cpu_args, ours=False)
        stricter = _cpu_stricter(sample.overload, label)
        if stricter is not None and cpu.error is not None:
            given = next(a for lb, a, _ in _cases(sample, dtype) if lb == label)
            fixed = run(sample.op, stricter(dict(given)), ours=False)
            cpu = type(cpu)(fixed.error, fixed.result, to_cpu(given))  # the arguments as given
        if cpu.error is None and _listed(CPU_MISSHAPEN, sample.overload, label):
            assert cpu.result.numel() == 0, where
            cpu = type(cpu)(None, _meta_result(sample.op, cpu_args), cpu.args)
        if _dtype_difference_allowed(cpu, ours, changed, record):
            continue
        if cpu.error is not None and ours.error is not None and _listed(CPU_ERROR_BY_SIZE, sample.overload, label):
            continue
        if cpu.error is None and isinstance(ours.error, RuntimeError) and _listed(CPU_UNCHECKED, sample.overload, label):
            continue
        try:
            # The truth from fresh arguments: the CPU's call wrote into its own.
            def truth(label=label, layout_bug=layout_bug):
                args = next(a for lb, a, _ in _cases(sample, dtype) if lb == label)
                return run(sample.op, to_float64(_contiguous(args) if layout_bug else args), ours=False)
            assert_same_outcome(cpu, ours, where, shapes_only=sample.unpinned, truth=truth, cpu_inexact=sample.cpu_float32_inexact)
        except AssertionError as failure:
            failures.append(str(failure))
    assert n > 0
    assert not failures, f"{len(failures)} of {n} cases:\n" + "\n".join(failures)


OUT_CASES = [c for c in CASES if c.values[0].out_names()]


@pytest.mark.parametrize("sample, record", OUT_CASES)
def test_inputs_of_another_dtype_with_outs_kept_raise_what_the_cpu_raises(sample, record):
    """The data inputs in another dtype while the outs keep theirs: the
    order of the CPU's dtype dispatch and its out= checks decides which error
    comes first (a complex input with a real out: TensorIterator's cast error,
    a structured kernel's out check, or the kernel's "not implemented"), and
    ours must raise the same type."""
    dtype = cpu_dtype(sample, record)
    outs = sample.out_names()
    failures = []
    for changed in (torch.complex64, torch.float16, torch.bfloat16, torch.float32):
        if changed == dtype:
            continue
        def changed_args(changed=changed):
            args = sample.call(dtype)
            for name, value in args.items():
                if name not in outs and sample.role(name) == DATA and isinstance(value, torch.Tensor) \
                        and value.is_floating_point():
                    args[name] = value.to(changed)
            return args
        cpu = run(sample.op, changed_args(), ours=False)
        ours = run(sample.op, changed_args(), ours=True)
        if _dtype_difference_allowed(cpu, ours, changed, record) and type(cpu.error) is not RuntimeError:
            continue
        try:
            # The truth: the CPU computes in the inputs' dtype, rounding each
            # step (half and bfloat16), where ours computes in float.
            truth = lambda changed_args=changed_args: run(sample.op, to_float64(changed_args()), ours=False)  # noqa: E731
            assert_same_outcome(cpu, ours, f"{sample.overload} inputs {changed}", shapes_only=sample.unpinned,
                                truth=truth, cpu_inexact=sample.cpu_float32_inexact)
        except AssertionError as failure:
            failures.append(str(failure))
    assert not failures, "\n".join(failures)


# --- limits the CPU does not have ----------------------------------------------

def _many_dims():
    """A tensor of 17 dims of size 2 whose strides merge in no order: stride
    2**(k+1) - 1 for dim k (never twice the next one; no two elements share
    memory), over a buffer of about 2**18 elements."""
    strides = [2 ** (k + 1) - 1 for k in range(MANY_DIMS)]
    base = torch.randn(sum(strides) + 1)
    return base.as_strided((2,) * MANY_DIMS, tuple(reversed(strides)))


def _compare(fn, *args):
    expected = fn(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    actual, dispatches = run_on_kernels(fn, *args)
    assert_matches(actual, expected)
    assert dispatches
    return actual


def test_take_and_put_on_17_unmergeable_dims():
    x = _many_dims()
    index = torch.randint(-x.numel(), x.numel(), (40,))
    _compare(torch.take, x, index)
    # put_ writes through self's own strides: the same strided self on each side.
    torch.manual_seed(2)
    reference = _many_dims()
    torch.manual_seed(2)
    target, target_index, values = to_device((_many_dims(), index, torch.arange(40.0)))
    reference.put_(index, torch.arange(40.0), accumulate=True)
    with emulate():
        target.put_(target_index, values, accumulate=True)
    assert_matches(to_cpu(target), reference)


@pytest.mark.parametrize("fn", [torch.special.ndtri, torch.special.log_ndtr,
                                lambda t: torch.heaviside(t, t.flip(0)),
                                lambda t: torch._add_relu(t, t.flip(0), alpha=2),
                                lambda t: torch.special.laguerre_polynomial_l(t, 3)], ids=str)
def test_element_wise_ops_on_17_unmergeable_dims(fn):
    _compare(fn, _many_dims())


@pytest.mark.parametrize("fn", [
    lambda t: torch.max(t, out=torch.empty(0)),
    lambda t: torch._aminmax(t, 3),
    lambda t: torch.var(t, (0, 5, 16), out=torch.empty(0)),
    lambda t: torch.std(t, 7, out=torch.empty(0)),
    lambda t: torch.mode(t.round(), 4),
    lambda t: torch.ops.aten._masked_softmax(t, t > 0, 2),
], ids=["max", "aminmax", "var", "std", "mode", "masked_softmax"])
def test_reductions_on_17_unmergeable_dims(fn):
    _compare(fn, _many_dims())


def test_glu_jvps_on_17_dims():
    x, dx = _many_dims(), _many_dims()
    glu = torch.nn.functional.glu(x, 3)
    _compare(lambda *a: torch.ops.aten.glu_jvp(*a, 3), glu, x, dx)
    _compare(lambda *a: torch.ops.aten.glu_backward_jvp(*a, 3), _many_dims(), glu, x, glu.clone(), dx)


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_segment_reduce_accepts_amax_and_amin(reduce):
    _compare(lambda d: torch.segment_reduce(d, reduce, lengths=torch.tensor([2, 0, 4])), torch.randn(6, 3))


def test_fused_adagrad_on_transposed_params():
    def step(p, g, s):
        torch._fused_adagrad_([p], [g], [s], [torch.tensor(3.0)], lr=0.1, lr_decay=0.01, weight_decay=0.1,
                              eps=1e-10, maximize=False)
        return p, g, s
    make = lambda: torch.randn(5, 4).t()  # noqa: E731
    torch.manual_seed(1)
    p, g, s = make(), make(), make().abs()
    _compare(step, p, g, s)
