"""Every registry overload on inputs holding NaN, +-inf, -0, subnormals and
values near the dtype's limits, for each floating dtype the op supports,
against the CPU (NaN equal to NaN). Where our half or bfloat16 result
differs because the CPU rounds each step in the reduced type, ours must be
at least as close to the float64 result; where the CPU lacks the dtype (the
registry's `differs`), the reference is the CPU in float32, rounded."""

from __future__ import annotations

import itertools
import math
import re

import pytest
import torch

from gamma_checks import standard_gamma_grad_reference
from helpers import assert_matches, run_on_kernels
from mps_ops.samples import DATA, float_dtypes, samples, sample_dtypes
from sweep import assert_same_outcome, run, tensors_of, to_float64


def edge_values(dtype) -> dict:
    """Groups of edge values, each injected together."""
    info = torch.finfo(dtype)
    return {
        "nan": [float("nan")],
        "infinities": [float("inf"), float("-inf")],
        "zeros and subnormals": [-0.0, info.tiny / 8, info.tiny, -info.tiny / 8],
        "extremes": [info.max, -info.max, info.max / 4],  # sums of these overflow
    }


def _inject(t, values):
    """t with every third element (from the first) replaced, in turn, by values."""
    flat = t.detach().clone().reshape(-1)
    for i, position in enumerate(range(0, flat.numel(), 3)):
        flat[position] = values[i % len(values)]
    return flat.reshape(t.shape)


def _data_names(sample, args):
    outs = sample.out_names()
    return [n for n, v in args.items()
            if n not in outs and sample.role(n) == DATA
            and isinstance(v, (torch.Tensor, list)) and tensors_of(v) and tensors_of(v)[0].is_floating_point()]


def _cases(sample, dtype):
    """(label, args) for each data argument and each group of edge values,
    and one with all values cycled through every data argument."""
    values = edge_values(dtype)
    names = _data_names(sample, sample.call(dtype))
    for name in names:
        for label, group in values.items():
            args = sample.call(dtype)
            args[name] = _replace(args[name], group)
            yield f"{name}: {label}", args
    args = sample.call(dtype)
    for name in names:
        args[name] = _replace(args[name], [v for group in values.values() for v in group])
    yield "all: every edge value", args


def _replace(value, values):
    if isinstance(value, list):
        return [_inject(value[0], values), *value[1:]]
    return _inject(value, values)


def _mode_reference(x, dim, keepdim):
    """torch.mode's documented rule, NaN included: the most frequent value,
    the smallest among ties, each NaN counted once and ranked after every
    number; the index of its last occurrence (of the first NaN for NaN). The
    CPU's answer with NaN present depends on where its sort leaves NaN."""
    moved = x.double().movedim(dim, -1)
    flat = moved.reshape(-1, moved.shape[-1]) if moved.dim() else moved.reshape(1, 1)
    values, indices = [], []
    for row in flat.tolist():
        best = None
        for i, v in enumerate(row):
            count = 1 if v != v else sum(1 for w in row if w == v)
            key = (-count, v != v, v if v == v else 0.0, -i if v == v else i)
            if best is None or key < best[0]:
                best = (key, v, i)
        values.append(best[1])
        indices.append(best[2])
    shape = list(moved.shape[:-1])
    v = torch.tensor(values, dtype=x.dtype).reshape(shape)
    i = torch.tensor(indices, dtype=torch.long).reshape(shape)
    if keepdim and x.dim():
        v, i = v.unsqueeze(dim), i.unsqueeze(dim)
    return v, i


def _polynomial_answer(cpu, args):
    """The CPU's Laguerre and Legendre kernels return the previous element's
    value for a NaN x of degree >= 2 (in float32 and float64 alike): there
    the answer is NaN."""
    x, n = args["x"], args["n"]
    wrong = torch.isnan(x) & (n >= 2)
    return cpu.result.masked_fill(wrong, float("nan")) if cpu.error is None else cpu.result


def _softmax_backward_answer(log: bool):
    """softmax's backwards: the CPU sums each row in order, in the dtype, so
    with terms near the float limit it loses the others (max - max + x sums
    to 0). The right answer takes the exact row sum (math.fsum), rounded to
    float, where it is finite there and the row (its float terms, the
    products grad * output for softmax) holds no NaN or infinity, and
    computes the rest in float as the CPU does (so overflows stay);
    elsewhere the CPU's answer stands."""
    def answer(cpu, args):
        grad, out, dim = args["grad_output"], args["output"], args["dim"]
        g, o = grad.float().movedim(dim, -1), out.float().movedim(dim, -1)
        terms = (g if log else g * o).double()  # the products in float, as the CPU and ours form them
        result = cpu.result.movedim(dim, -1).clone()
        for index in itertools.product(*(range(n) for n in terms.shape[:-1])):
            row = terms[index].tolist()
            if not all(math.isfinite(v) for v in row + o[index].tolist()):
                continue
            total = torch.tensor(math.fsum(row), dtype=torch.float64).float()
            if not torch.isfinite(total):
                continue
            exact = g[index] - o[index].exp() * total if log else o[index] * (g[index] - total)
            result[index] = exact.to(grad.dtype)
        return result.movedim(-1, dim)
    return answer


def _mean_answer(cpu, args):
    """var_mean/std_mean: the CPU's sequential Welford mean turns NaN on the
    first value after an infinity (inf only where it comes last); the mean is
    torch.mean's, in float64, rounded to the dtype."""
    x = args["self"]
    dims = args.get("dim")
    mean = x.double().mean(dim=dims, keepdim=args.get("keepdim", False)) if dims is not None else x.double().mean()
    if args.get("keepdim", False) and dims is None:
        mean = mean.reshape([1] * x.dim())
    return (cpu.result[0], mean.to(x.dtype))


def _gelu_answer(cpu, args):
    """_addmm_activation with use_gelu: torch's float32 CPU gelu on AVX512
    machines (torch 2.13's vectorized erf-based path) gives NaN for +inf and
    inf for finite values near the float limit (gelu(3.4e38) = 3.4e38: an
    intermediate overflows), where float64's gelu, and the same CPU on AVX2
    machines, give inf and the value. Where the CPU's result is NaN or
    infinite and the call in float64, rounded to the dtype, is not that, the
    latter; elsewhere the CPU's."""
    if not args.get("use_gelu") or cpu.error is not None:
        return cpu.result
    wide = {k: v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() and v.numel() else v
            for k, v in args.items() if k != "out"}
    exact = torch._addmm_activation(wide["self"], wide["mat1"], wide["mat2"], beta=wide.get("beta", 1),
                                    alpha=wide.get("alpha", 1), use_gelu=True).to(cpu.result.dtype)
    same = (exact == cpu.result) | (torch.isnan(exact) & torch.isnan(cpu.result))
    return torch.where(~torch.isfinite(cpu.result) & ~same, exact, cpu.result)


def _beyond_the_grid(x):
    """fake_quantize_per_channel_affine_cachemask and the learnable per-channel
    op over it: the CPU converts each rounded value to int64 before clamping,
    and x86 gives INT64_MIN for NaN, the infinities and values beyond int64,
    so all of them land on quant_min. The answer is the per-tensor op's float
    clamp (the registry's `differs`): NaN and negative ones on quant_min,
    positive ones on quant_max, which the CPU's call gives for stand-ins
    beyond the grid on the same side. Returns (where, the stand-ins)."""
    x = x.float()
    beyond = ~torch.isfinite(x) | (x.abs() > 1e6)
    return beyond, torch.where(beyond, torch.where(x > 0, 1e6, -1e6), x)


def _per_channel_fake_quantize_answer(cpu, args):
    beyond, stand_in = _beyond_the_grid(args["self"])
    out, mask = torch.ops.aten.fake_quantize_per_channel_affine_cachemask(**dict(args, self=stand_in))
    return (torch.where(beyond, out.to(cpu.result[0].dtype), cpu.result[0]), torch.where(beyond, mask, cpu.result[1]))


def _learnable_per_channel_answer(cpu, args):
    beyond, stand_in = _beyond_the_grid(args["self"])
    out = torch.ops.aten._fake_quantize_learnable_per_channel_affine(**dict(args, self=stand_in))
    return torch.where(beyond, out.to(cpu.result.dtype), cpu.result)


def _standard_gamma_grad_answer(cpu, args):
    """Where the CPU's float64 steps underflow or cancel (a subnormal alpha:
    gamma_checks.py), the series with the powers divided out, rounded."""
    return standard_gamma_grad_reference(args["self"], args["output"]).to(cpu.result.dtype)


# Where the CPU's result is wrong for some edge values: the right answer.
CPU_WRONG = {
    "_standard_gamma_grad": _standard_gamma_grad_answer,
    "fake_quantize_per_channel_affine_cachemask": _per_channel_fake_quantize_answer,
    "_fake_quantize_learnable_per_channel_affine": _learnable_per_channel_answer,
    "var_mean.correction": _mean_answer, "var_mean.correction_out": _mean_answer,
    "std_mean.correction": _mean_answer, "std_mean.correction_out": _mean_answer,
    "_softmax_backward_data": _softmax_backward_answer(False),
    "_softmax_backward_data.out": _softmax_backward_answer(False),
    "_log_softmax_backward_data": _softmax_backward_answer(True),
    "_log_softmax_backward_data.out": _softmax_backward_answer(True),
    "special_laguerre_polynomial_l": _polynomial_answer, "special_laguerre_polynomial_l.out": _polynomial_answer,
    "special_legendre_polynomial_p": _polynomial_answer, "special_legendre_polynomial_p.out": _polynomial_answer,
    "_addmm_activation": _gelu_answer, "_addmm_activation.out": _gelu_answer,
}


# Float32's range exceeded: batch_norm's batch statistics (and its
# backward's sums) of values near the float limit, here every third element
# of every channel, overflow where the CPU accumulates float32 in double;
# weight_norm's backward sums overflow in another order than the CPU's (the
# registry's `differs` says so; docs/ops.md shows it). Compared by shape and
# dtype only.
FLOAT_RANGE_EXCEEDED = [
    (r"(native_batch_norm|_native_batch_norm_legit|_batch_norm_with_update)(\..*)?", r"input: extremes"),
    (r"(native_)?batch_norm_backward", r"grad_out: extremes"),
    (r"native_group_norm_backward", r"((grad_out|input|weight): extremes|all: every edge value)"),
    # grid_sample's backward: neighbour differences of values near the limit
    # (v_east - v_west) and coordinates scaled from grid values near it
    # overflow at other steps than the CPU's (its bfloat16 kernel converts
    # at other places), so which gradients are NaN and which infinite differs.
    (r"grid_sampler_2d_backward", r"((input|grid): extremes|all: every edge value)"),
    # The 3-D one: the CPU computes half and bfloat16 in the dtype, ours in
    # float, whose grid gradient sums neighbour values near the limit (with
    # opposite signs) to float's precision of them, not float64's; and
    # bfloat16 values near float's limit overflow the products of a value,
    # two distances and grad_output (float64's do not).
    (r"grid_sampler_3d_backward", r"((grad_output|input|grid): extremes|all: every edge value)"),
    # Not a range: an infinite weight makes its group's sums infinite, and
    # the CPU's uncentred ones (sum(dy x w) less m sum(dy w)) meet inf - inf
    # at another step than ours (centred on m): which of the group's
    # gradients come out NaN and which infinite differs.
    (r"native_group_norm_backward", r"weight: infinities"),
    # Products near the limit summed: which partial sum overflows first, to
    # which sign, depends on the order (the CPU's serial one gives an
    # infinity where ours may meet +inf and -inf: NaN).
    (r"_weight_norm_interface_backward", r"(saved_v|grad_w): extremes"),
    # The same for a matrix product's sums, in the order torch's mm picks (ours
    # runs torch's mm, then adds beta * self; the CPU's addmm sums into it).
    (r"_addmm_activation(\..*)?", r"(mat1|mat2): extremes"),
    # The same for ormqr, whose CPU (LAPACK) applies the reflectors as one
    # block (I - V T V^T, T's entries products of taus) where ours applies them
    # one by one: which product overflows, or meets a NaN, is the grouping's,
    # and the compiler's (on the H200 the CUDA target's contracted multiply-adds
    # parted from the CPU at the extremes of self and input3 too, where the
    # emulator, compiled without contraction, did not; Metal contracts too).
    (r"ormqr(\..*)?", r"((self|input2|input3): extremes|all: every edge value)"),
    # Not a range: a NaN or an infinity in A makes the pivot search's
    # comparisons meaningless, and implementations part there (the CPU's MKL
    # isamax takes a NaN as the largest entry; reference LAPACK's, and ours,
    # pass over it), so pivots and the NaNs they spread differ. Finite edge
    # values (zeros, subnormals, extremes) are compared in full.
    (r"linalg_ldl_factor_ex(\..*)?", r"(self: nan|self: infinities|all: every edge value)"),
    # cholesky_inverse: the CPU's LAPACK inverts the factor's triangle
    # (trtri) and multiplies the inverse by its transpose (lauum); ours solves
    # for the identity's columns. A NaN or infinity in the factor, or values
    # near the limit, reach other entries, or overflow in other products, by
    # each route (where the NaNs and infinities land is the algorithm's).
    (r"cholesky_inverse(\..*)?", r"(self: (nan|infinities|extremes)|all: every edge value)"),
    # linalg_lu_solve: right-hand sides near the limit overflow in the
    # substitutions' partial sums, whose order is the CPU's BLAS trsm's there
    # (blocked) and index order here.
    (r"linalg_lu_solve", r"(B: extremes|all: every edge value)"),
    # linalg_matrix_exp: values near the limit overflow in the squarings, and
    # which entries an infinity meeting a zero in a product turns NaN is the
    # schedule's (float64's range holds what float32's and bfloat16's do not).
    (r"linalg_matrix_exp", r"self: extremes"),
    # The antialiased resizes' backwards: grad_output near the limit times
    # weights above 1 (bicubic's) overflows where the CPU's fused
    # multiply-add (its build contracts) rounds the sum only, so which sums
    # are infinite, and which meet inf - inf, differs.
    (r"_upsample_(bilinear|bicubic|lanczos)2d_aa_backward(\..*)?", r"(grad_output: extremes|all: every edge value)"),
]


def _finite(args: dict) -> dict:
    return {k: v.nan_to_num(nan=0.0, posinf=0.0, neginf=0.0) if isinstance(v, torch.Tensor) and v.is_floating_point()
            else v for k, v in args.items()}


# Where the CPU's own call crashes the process or never returns: the
# arguments its reference call takes instead. torch 2.13's CPU eigvals hands
# NaN and infinities to MKL's sgebal, which segfaults; its binomial's
# waiting-time loop never ends for a NaN count. All are unpinned samples,
# compared by shape, dtype and error type only; test_eig.py checks our NaN
# eigenvalues, test_binomial.py our NaN and infinite counts.
CPU_CRASHES = {"_linalg_eigvals": _finite, "linalg_eigvals.out": _finite, "binomial": _finite}

# Where the CPU rejects every call of a kind: lstsq's MKL refuses a NaN in A
# or B ("Parameter 4 was incorrect on entry to SGELSD", which torch turns
# into an internal assert), and its drivers part on infinities. Not compared;
# test_lstsq.py checks ours (NaN in, NaN out, or LinAlgError where an SVD
# meets it).
CPU_REFUSES = [(r"linalg_lstsq\.out", r"((self|b): (nan|infinities)|all: every edge value)")]

# Where the CPU's answer is what its platform makes of undefined behaviour:
# not compared. The fused fake quantizer's zero point from a NaN or infinite
# observation is a float-to-int conversion of NaN (INT_MIN on x86, 0 on
# Arm); test_fake_quantize.py checks ours (quant_min).
# The learnable fake quantizers' backwards convert each rounded x / scale +
# zero point to int64 before comparing it with the range: NaN, the
# infinities and values beyond int64 (the extremes over a scale below 1)
# give INT64_MIN on x86, below the range whatever their sign;
# test_fake_quantize.py checks ours (the side of their sign, NaN below).
CPU_UNDEFINED = [(r"_fused_moving_avg_obs_fq_helper", r"(self: (nan|infinities)|all: every edge value)"),
                 (r"_fake_quantize_learnable_per_(tensor|channel)_affine_backward",
                  r"(self: (nan|infinities|extremes)|all: every edge value)")]


def _listed(table, overload, label) -> bool:
    """Whether (overload, label) matches a pair of regular expressions of table."""
    return any(re.fullmatch(o, overload) and re.fullmatch(a, label) for o, a in table)


CASES = [pytest.param(sample, record, dtype, id=f"{sample.overload}-{str(dtype)[6:]}")
         for sample, record in samples() for dtype in float_dtypes(record)
         if dtype in sample_dtypes(sample, record) or not sample.dtypes]


@pytest.mark.parametrize("sample, record, dtype", CASES)
def test_edge_values_match_the_cpu(sample, record, dtype):
    failures = []
    n = 0
    for (label, cpu_args), (_, our_args) in zip(_cases(sample, dtype), _cases(sample, dtype)):
        n += 1
        where = f"{sample.overload} {dtype} {label}"
        if _listed(CPU_REFUSES + CPU_UNDEFINED, sample.overload, label):
            continue
        ours = run(sample.op, our_args, ours=True)
        try:
            if sample.overload == "mode":
                assert ours.error is None, f"{where}: {ours.error!r}"
                expected = _mode_reference(cpu_args["self"], cpu_args["dim"], cpu_args["keepdim"])
                assert_matches(ours.result[0], expected[0], where)
                assert torch.equal(ours.result[1], expected[1]), f"{where}: indices {ours.result[1]} != {expected[1]}"
                continue
            cpu_takes = CPU_CRASHES.get(sample.overload, dict)
            cpu = run(sample.op, cpu_takes(cpu_args), ours=False)
            if isinstance(cpu.error, NotImplementedError) and dtype in record.dtypes:
                # The CPU lacks the dtype: compare with it in float32, rounded.
                wide = run(sample.op, cpu_takes(_in_float32(dict(_cases(sample, dtype))[label], dtype)), ours=False)
                assert wide.error is None, f"{where}: the float32 call raised {wide.error!r}"
                cpu = type(wide)(None, _narrowed(wide.result, dtype), {k: _narrowed(v, dtype) for k, v in wide.args.items()})
            # The truth from fresh arguments: the CPU's call wrote into its own.
            truth_args = dict(_cases(sample, dtype))[label]
            if sample.overload in CPU_WRONG and cpu.error is None:
                fixed = CPU_WRONG[sample.overload](cpu, dict(_cases(sample, dtype))[label])
                written = {"out": fixed, "out0": fixed[0], "out1": fixed[1]} if isinstance(fixed, tuple) else {"out": fixed}
                cpu = type(cpu)(None, fixed, {k: written.get(k, v) for k, v in cpu.args.items()})
            assert_same_outcome(cpu, ours, where, shapes_only=sample.unpinned or _listed(FLOAT_RANGE_EXCEEDED, sample.overload, label),
                                truth=lambda: run(sample.op, to_float64(truth_args), ours=False), cpu_inexact=sample.cpu_float32_inexact)
        except AssertionError as failure:
            failures.append(str(failure))
    assert n > 0
    assert not failures, f"{len(failures)} of {n} cases:\n" + "\n".join(failures)


def _in_float32(args, dtype):
    def widen(v):
        if isinstance(v, torch.Tensor) and v.dtype == dtype:
            return v.float()
        if isinstance(v, list):
            return [widen(t) for t in v]
        return v
    return {k: widen(v) for k, v in args.items()}


def _narrowed(value, dtype):
    if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
        return value.to(dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_narrowed(v, dtype) for v in value)
    return value


# --- the brief's cases, one by one ---------------------------------------------

def _compare_with_cpu(fn, *args):
    """fn on the CPU and on our kernels, each on its own copies (fn may write)."""
    def copies():
        return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    expected = fn(*copies())
    actual, dispatches = run_on_kernels(fn, *copies())
    assert_matches(actual, expected)
    assert dispatches
    return actual


@pytest.mark.parametrize("n", [1, 5, 16])
def test_mode_of_an_all_nan_slice_is_nan_at_its_first_index(n):
    x = torch.full((3, n), float("nan"))
    x[1] = torch.arange(n, dtype=torch.float32) % 2  # a slice without NaN beside them
    values, indices = _compare_with_cpu(lambda t: torch.mode(t, -1), x)
    assert values[0].isnan() and indices[0].item() == 0


def test_batch_norm_update_stats_with_infinities_gives_the_cpus_mean():
    x = torch.randn(4, 3, 5)
    x[1, 0, 2] = x[0, 0, 1] = float("inf")
    x[2, 1, 1] = float("-inf")
    x[0, 2, 0], x[1, 2, 3] = float("inf"), float("-inf")
    mean, var = _compare_with_cpu(lambda t: torch.batch_norm_update_stats(t, None, None, 0.1), x)
    assert mean.tolist()[:2] == [float("inf"), float("-inf")] and mean[2].isnan() and var.isnan().all()


@pytest.mark.parametrize("norm_type", [float("-inf"), float("inf"), 0.0, 1.0, 3.0])
def test_embedding_renorm_norm_types_like_the_cpu(norm_type):
    weight = torch.randn(6, 4) * 3
    weight[2, 1] = 0.01  # row 2's smallest magnitude is small: -inf-norm below max_norm
    _compare_with_cpu(lambda w, i: torch.embedding_renorm_(w, i, 0.5, norm_type), weight, torch.tensor([0, 2, 5]))


def test_glu_backward_jvp_reads_the_given_grad_x():
    # grad_x's first half is grad_glu * sigmoid(b) after a backward pass; any
    # other value must be used as given, as the CPU does.
    x, dx, grad_x = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4)
    grad_glu, dgrad_glu = torch.randn(3, 2), torch.randn(3, 2)
    _compare_with_cpu(lambda *a: torch.ops.aten.glu_backward_jvp(*a, 1), grad_x, grad_glu, x, dgrad_glu, dx)


@pytest.mark.parametrize("marks", ["zeros", "ones", "swapped"])
def test_multilabel_margin_loss_backward_reads_the_given_is_target(marks):
    x = torch.randn(3, 5)
    target = torch.tensor([[3, 0, -1, 1, 2], [4, 4, 1, -1, 0], [-1, 0, 0, 0, 0]])
    _, is_target = torch.ops.aten.multilabel_margin_loss_forward(x, target, 0)
    given = {"zeros": torch.zeros_like(is_target), "ones": torch.ones_like(is_target),
             "swapped": 1 - is_target}[marks]
    _compare_with_cpu(lambda *a: torch.ops.aten.multilabel_margin_loss_backward(*a),
                      torch.randn(3), x, target, 0, given)
