"""Shared by the op tests: where tensors live, how results are compared, and
how a call is run on our kernels with proof that they ran."""

from __future__ import annotations

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.utils._pytree import tree_map

import mps_ops
from mps_ops.testing import device, emulate

# Per-dtype tolerances against the CPU reference. float32 special functions
# are computed by different algorithms than the CPU's (no double on Metal), so
# a few float32 ulps apart; half and bfloat16 results are rounded once from
# float, as the CPU does.
TOLERANCES = {
    torch.float32: dict(rtol=2e-5, atol=2e-6),
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
}


def tolerance(dtype):
    return TOLERANCES.get(dtype, dict(rtol=0, atol=0))


class OnCpu:
    """A 0-dim tensor that must stay on the CPU when the rest moves to the
    device: the CPU-scalar operand users get from Python numbers."""

    def __init__(self, tensor):
        assert tensor.dim() == 0
        self.tensor = tensor


def copies(tree, to=None, keep=lambda t: False):
    """The tree with each tensor (but those `keep` accepts, and OnCpu's,
    unwrapped) replaced by a twin on device `to` (default its own); views of
    one storage stay views of one copied storage (an out= aliasing self)."""
    storages = {}

    def copy(t):
        if isinstance(t, OnCpu):
            return t.tensor
        if not isinstance(t, torch.Tensor) or keep(t):
            return t
        # (Empty storages all have address 0 and share nothing.)
        key = (t.untyped_storage().data_ptr(), t.device) if t.untyped_storage().nbytes() else id(t)
        if key not in storages:
            storages[key] = storage_copy(t, to)
        moved = twin(t.detach(), storage=storages[key])
        return moved.requires_grad_() if t.requires_grad else moved

    return tree_map(copy, tree, is_leaf=lambda t: isinstance(t, OnCpu))


def to_device(tree):
    """Arguments moved to the test device in their layouts (tensors already
    there are taken as they are; OnCpu values stay on the CPU)."""
    target = device()

    def retarget(node):
        # A factory's device= names where its result lives: the test device.
        if isinstance(node, dict):
            return {k: target if k == "device" and v is not None else retarget(v) for k, v in node.items()}
        if isinstance(node, (list, tuple)) and not hasattr(node, "_fields"):
            return type(node)(retarget(v) for v in node)
        return node

    return copies(retarget(tree), target, keep=lambda t: t.device.type == torch.device(target).type)


def on_cpu(tree):
    """The reference's view of a tree: OnCpu unwrapped."""
    return tree_map(lambda t: t.tensor if isinstance(t, OnCpu) else t, tree,
                    is_leaf=lambda t: isinstance(t, OnCpu))


def storage_copy(t, to=None):
    """A copy of t's whole storage (bytes), on device `to` (default t's)."""
    raw = torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
    return raw.to(to or t.device, copy=True).untyped_storage()


def twin(t, to=None, storage=None):
    """A copy of t (on device `to`, default t's) in storage of its own, or in
    `storage` (a storage_copy of t's), with t's sizes, strides and storage
    offset, and its conjugate and negative bits: what a call may write into
    without touching t, in t's very layout (a clone or .to() makes a strided
    or expanded view dense)."""
    storage = storage if storage is not None else storage_copy(t, to)
    result = torch.empty(0, dtype=t.dtype, device=storage.device).set_(storage, t.storage_offset(), t.size(),
                                                                        t.stride())
    # A conjugate or negative view shows other values than its storage holds.
    torch._C._set_conj(result, t.is_conj())
    torch._C._set_neg(result, t.is_neg())
    return result


def run_on_cpu(fn, *args):
    """fn on the CPU reference, on twins of the arguments: an in-place or
    out= call must leave the arguments as they were for our run (on the
    emulator, our run takes the very same tensors)."""
    return fn(*copies(args))


def to_cpu(tree):
    """Results back on the CPU in their layout (.cpu() would make a strided
    result dense, and tests compare strides)."""
    return tree_map(lambda t: twin(t.detach(), "cpu") if isinstance(t, torch.Tensor) and not t.is_cpu else t,
                    tree)


def run_on_kernels(fn, *args, **kwargs):
    """fn on our kernels; returns (result on the CPU, dispatches seen).
    Tensors fn makes itself (an out=, lengths) are made on the test device,
    as a user's code on a Mac makes them on "mps"."""
    return run_routed(emulate, fn, *args, **kwargs)


def run_routed(route, fn, *args, **kwargs):
    """run_on_kernels with registry ops reaching our stubs through `route`
    (a context manager: emulate, mps_ops.testing.native_route, or one that
    routes nothing)."""
    args, kwargs = to_device((args, kwargs))
    with torch.device(device()), mps_ops.profile() as prof, route():
        result = fn(*args, **kwargs)
    return to_cpu(result), prof.dispatches


def errors_of_cpu_and_ours(fn, *args):
    """The exceptions fn raises on the CPU and on our kernels (each must
    raise), after checking they are of one exact type; the caller compares
    the messages, whose wording differs by design (ours name op, dtype and
    device where the CPU names its internal kernel)."""
    with pytest.raises(Exception) as cpu:
        fn(*args)
    with pytest.raises(Exception) as ours:
        run_on_kernels(fn, *args)
    assert type(ours.value) is type(cpu.value), (ours.value, cpu.value)
    return cpu.value, ours.value


def seeded_randn(*shape, seed=0):
    """torch.randn(*shape) after torch.manual_seed(seed): the same matrix
    for every run (the global generator is left seeded, as the tests that
    draw after it expect)."""
    torch.manual_seed(seed)
    return torch.randn(*shape)


def assert_errors_match(call, *args, same_words=True):
    """call(*args) raises the CPU's exception type on our kernels too (args
    moved to the test device); with same_words, in the CPU's words."""
    cpu, ours = errors_of_cpu_and_ours(call, *args)
    if same_words:
        assert str(ours) == str(cpu)


def assert_float64_and_complex_refused(fn, op, *inputs):
    """fn on float64 copies of inputs raises TypeError naming float64 (Metal
    has no double); on complex64 ones, NotImplementedError naming op."""
    with pytest.raises(TypeError, match="float64"):
        run_on_kernels(fn, *[x.double() if x.is_floating_point() else x for x in inputs])
    with pytest.raises(NotImplementedError, match=f"{op}.*ComplexFloat"):
        run_on_kernels(fn, *[x.to(torch.complex64) if x.is_floating_point() else x for x in inputs])


def assert_gradients_match(loss, *inputs, rtol=1e-4, atol=1e-4):
    """loss(*inputs).backward() on the CPU and through our kernels: the same
    gradient for every input."""
    cpu = [x.clone().requires_grad_() for x in inputs]
    loss(*cpu).backward()
    with torch.device(device()), emulate():
        ours = [x.to(device()).requires_grad_() for x in inputs]
        loss(*ours).backward()
    for theirs, mine in zip(cpu, ours):
        torch.testing.assert_close(mine.grad.cpu(), theirs.grad, rtol=rtol, atol=atol)


def opinfo_gradients(opinfo, sample, seed, dtype):
    """(inputs, gradients): the sample's tensors that require grad, and a
    function of them (moved to any device) returning their gradients of the
    OpInfo's call for a grad_output drawn on the CPU from `seed` and rounded
    to dtype (the same values on every device and in float64)."""
    inputs = [t for t in (sample.input, *sample.args, *sample.kwargs.values())
              if isinstance(t, torch.Tensor) and t.requires_grad]

    def gradients(*tensors):
        leaves = [t.detach().requires_grad_() for t in tensors]
        mapping = dict(zip(map(id, inputs), leaves))
        swap = lambda t: mapping.get(id(t), t)  # noqa: E731
        out = opinfo(swap(sample.input), *map(swap, sample.args), **{k: swap(v) for k, v in sample.kwargs.items()})
        generator = torch.Generator().manual_seed(seed)
        grad_out = torch.randn(out.shape, generator=generator, device="cpu").to(dtype).to(out.device, out.dtype)
        return torch.autograd.grad(out, leaves, grad_out, allow_unused=True)

    return inputs, gradients


def assert_gradients_near(actual, expected, truth, dtype, msg="", ulps=8):
    """Each gradient within the dtype's tolerance of the CPU's, or no further
    from the float64 one than twice the CPU's distance plus `ulps` ulps of
    its scale (the sums run in another order)."""
    for a, e, t in zip(actual, expected, truth):
        if e is None:
            assert a is None, msg
            continue
        try:
            assert_matches(a, e, msg)
        except AssertionError:
            bound = 2 * error_against(e, t) + ulps * torch.finfo(dtype).eps * t.abs().max().item()
            assert error_against(a, t) <= bound, f"{msg}: {error_against(a, t):.3g} from the float64 gradient"


def assert_matches(actual, expected, msg=""):
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_matches(a, e, msg)
        return
    assert actual.dtype == expected.dtype, f"{msg}: dtype {actual.dtype} != {expected.dtype}"
    torch.testing.assert_close(actual, expected, equal_nan=True, msg=lambda m: f"{msg}: {m}",
                               **tolerance(expected.dtype))


def assert_at_least_as_accurate(actual, cpu, truth, msg=""):
    """Where our half/bfloat16 result differs from the CPU's by more than the
    tolerance because the CPU rounds more (it accumulates in the reduced type;
    we accumulate in float), ours must be no further from the float64 truth
    than the CPU's is."""
    if isinstance(cpu, (tuple, list)):
        for a, c, t in zip(actual, cpu, truth):
            assert_at_least_as_accurate(a, c, t, msg)
        return
    if not cpu.is_floating_point():
        assert_matches(actual, cpu, msg)
        return
    ours_error = error_against(actual, truth)
    cpu_error = error_against(cpu, truth)
    if cpu_error == float("inf"):
        # The CPU overflowed where the truth is finite: no bound from it, so
        # ours must be the truth rounded to the dtype, within its tolerance.
        assert_near_truth(actual, truth, actual.dtype, msg)
        return
    assert ours_error <= cpu_error, f"{msg}: error {ours_error:.3g} > the CPU's {cpu_error:.3g}"


def assert_normwise_as_accurate(actual, cpu, truth, roundings, msg=""):
    """For results whose entries differ in size by orders (a matrix
    function's, where another algorithm's rounding moves the small entries
    by more than any elementwise tolerance): ours no further from the
    float64 truth than four times the CPU's distance, or `roundings`
    roundings of the largest entry in the result's dtype."""
    assert actual.shape == cpu.shape and actual.dtype == cpu.dtype, msg
    ours_error = error_against(actual, truth)
    rounding = roundings * torch.finfo(actual.dtype).eps / 2 * float(truth.abs().max().nan_to_num(posinf=0.0))
    bound = max(4 * error_against(cpu, truth), rounding)
    assert ours_error <= bound, f"{msg}: error {ours_error:.3g} > {bound:.3g}"


def error_against(result, truth) -> float:
    """The largest distance of result from the float64 truth: 0 where both are
    the same infinity or both NaN, infinite where only one of them is NaN or
    infinite (a NaN where the truth is finite is no closer than any number)."""
    result, truth = result.double(), truth.double()
    same = (result == truth) | (result.isnan() & truth.isnan())
    distance = (result - truth).abs().nan_to_num(nan=float("inf"))
    return distance.masked_fill(same, 0.0).max().item() if distance.numel() else 0.0


def assert_near_truth(actual, truth, dtype, msg=""):
    """Floating results of a half/bfloat16 call within the dtype's tolerance
    of the float64 call's results rounded to the dtype (integer results, such
    as indices, are the CPU comparison's business)."""
    if isinstance(truth, (tuple, list)):
        for a, t in zip(actual, truth):
            assert_near_truth(a, t, dtype, msg)
        return
    if not truth.is_floating_point():
        return
    torch.testing.assert_close(actual.double(), truth.to(dtype).double(), equal_nan=True,
                               msg=lambda m: f"{msg}: against the float64 result: {m}", **tolerance(dtype))


def to_float64(tree, dtype):
    return tree_map(lambda t: t.double() if isinstance(t, torch.Tensor) and t.dtype == dtype else t, tree)


def numel_of(result) -> int:
    if isinstance(result, (tuple, list)):
        return sum(numel_of(r) for r in result)
    return result.numel()


def opinfos_for(record, names=None):
    """The OpInfos of record.opinfo (or of `names`: record.grad_opinfo, say)."""
    names = record.opinfo if names is None else names
    found = [op for op in op_db if opinfo_name(op) in names]
    assert {opinfo_name(op) for op in found} == set(names), f"{record.name}: unknown OpInfo names"
    return found


def opinfo_name(op) -> str:
    """OpInfo's full name: "max.reduction_no_dim" for a variant test."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def in_layout(t, layout):
    """t's values in a layout of the same shape: contiguous, transposed
    (first and last dims swapped in memory), strided (every other element
    of a wider last dim) or expanded (the first element of each last-dim
    row, broadcast along it)."""
    if layout == "contiguous":
        return t
    if layout == "transposed":
        return t.transpose(0, -1).contiguous().transpose(0, -1)
    if layout == "strided":
        wide = torch.empty(t.shape[:-1] + (2 * t.shape[-1],), dtype=t.dtype)
        wide[..., ::2] = t
        return wide[..., ::2]
    if layout == "expanded":
        return t[..., :1].expand(t.shape)
    raise ValueError(layout)


def values_with_limits(dtype, shape, scale=100.0):
    """Random values of `dtype` (bool: random truths; floats: normal times
    `scale`); integers span the dtype and hold its minimum and maximum at
    [1, 3] and [2, 7] (a 2-D shape of at least 3 x 8): the values a
    reduction's identity or a widening's sign extension gets wrong."""
    if dtype == torch.bool:
        return torch.rand(*shape) > 0.5
    if dtype.is_floating_point:
        return (torch.randn(*shape) * scale).to(dtype)
    info = torch.iinfo(dtype)
    x = torch.randint(info.min, info.max, shape, dtype=dtype)
    x[1, 3], x[2, 7] = info.min, info.max
    return x


# The running torch's release as (major, minor).
TORCH_RELEASE = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])

# torch's CPU ldl_solve checks its pivots' magnitudes from 2.12 on
# (pytorch/pytorch#181032); before, bad pivots go to LAPACK, which writes
# outside B and corrupts the heap: tests must not hand them to the CPU there.
CPU_CHECKS_LDL_PIVOTS = TORCH_RELEASE >= (2, 12)


def ldl_pivots_unchecked_by_cpu(pivots) -> bool:
    """Whether the CPU passes these pivots to LAPACK unchecked although they
    are bad: magnitudes out of range before torch 2.12 (no check then), or a
    2x2 block without its partner (a negative pivot not repeated right after
    it), which no release checks."""
    if pivots.numel() == 0:
        return False
    n = pivots.shape[-1]
    pivots = pivots.long()  # as the CPU reads them (uint16 has no abs)
    magnitudes = pivots.abs()
    if bool((magnitudes > n).any()) or bool((magnitudes < 1).any()):
        return not CPU_CHECKS_LDL_PIVOTS  # from 2.12 the CPU's own checks raise first
    for row in pivots.reshape(-1, n).tolist():
        k = 0
        while k < n:
            if row[k] < 0:
                if k + 1 >= n or row[k + 1] != row[k]:
                    return True
                k += 1
            k += 1
    return False


# Batches of matrices (at least two) in the layouts linear-algebra kernels
# must read: transposed (column-major), every other column, one matrix
# broadcast over the batch, and a storage offset.
MATRIX_LAYOUTS = {
    "transposed": lambda a: a.mT.contiguous().mT,
    "sliced": lambda a: torch.cat([a, a], -1)[..., ::2],
    "expanded_batch": lambda a: a[:1].expand(3, *a.shape[1:]),
    "offset": lambda a: torch.cat([a[:1], a])[1:],
}


# Inputs for reductions in the layouts OpInfo leaves out (each builds a fresh
# tensor): test_reductions.py and test_hash_tensor.py run every reduction
# they test over all of them.
REDUCTION_LAYOUTS = {
    "contiguous": lambda: torch.randn(7, 45),
    "transposed": lambda: torch.randn(45, 7).t(),
    "strided": lambda: torch.randn(7, 90)[:, ::2],
    "expanded": lambda: torch.randn(7, 1).expand(7, 45),
    "three_dims": lambda: torch.randn(3, 5, 70).transpose(1, 2),
    "offset": lambda: torch.randn(8, 45)[1:],
    "zero_dim": lambda: torch.tensor(1.25),
    "long_slice": lambda: torch.randn(2, 3000),
}


def ctc_lengths(value) -> list:
    """_ctc_loss's input or target lengths, given as a list or (the .Tensor
    forms) a tensor, as a list."""
    return value.reshape(-1).tolist() if isinstance(value, torch.Tensor) else list(value)


def ctc_lengths_integral(args) -> bool:
    """Whether the lengths are a list or an integer tensor (the .Tensor
    forms refuse other dtypes first, the CPU's and ours)."""
    return all(not isinstance(v, torch.Tensor) or not (v.is_floating_point() or v.is_complex() or v.dtype == torch.bool)
               for v in (args["input_lengths"], args["target_lengths"]))


def ctc_arguments_valid(args) -> bool:
    """Our _ctc_loss checks (the CPU forward's; the backward's also of the
    forward's outputs, which the CPU's backward reads unchecked): lengths,
    targets and outputs of matching sizes."""
    lp, tg = args["log_probs"], args["targets"]
    inputs, targets = ctc_lengths(args["input_lengths"]), ctc_lengths(args["target_lengths"])
    batch, time = lp.size(1), lp.size(0)
    if tg.dim() not in (1, 2) or len(inputs) != batch or len(targets) != batch or any(n < 0 for n in targets) \
            or any(n < 0 or n > time for n in inputs):
        return False
    longest = max(targets, default=0)
    if tg.dim() == 1 and tg.numel() != sum(targets) or tg.dim() == 2 and (tg.size(0) != batch or tg.size(1) < longest):
        return False
    if "log_alpha" not in args:
        return True
    alpha = args["log_alpha"]
    return (all(t.dim() == 1 and t.size(0) == batch for t in (args["grad"], args["neg_log_likelihood"]))
            and alpha.dim() == 3 and alpha.shape[:2] == (batch, time) and alpha.size(2) >= 2 * longest + 1)


def cholesky_factor(*shape, upper=False):
    """float32 Cholesky factors (lower, or upper: the transpose) of
    well-conditioned symmetric positive definite matrices, factored in
    float64."""
    a = torch.randn(*shape, dtype=torch.float64)
    n = shape[-1]
    lower = torch.linalg.cholesky(a @ a.mT + n * torch.eye(n, dtype=torch.float64))
    return (lower.mT if upper else lower).float()
