"""grid_sampler_2d_backward (a fill op: torch 2.9 to 2.12 lack it on MPS, so
training through grid_sample raised) against the CPU: every interpolation
(bilinear, nearest, bicubic) x padding (zeros, border, reflection) x
align_corners, float32, half and bfloat16, grid points outside the input,
on pixel centres and edges, non-contiguous operands, many points sharing
input elements (the atomic adds), each output mask, empty grids and
channels, non-finite grid values, the CPU's errors and what it leaves
unchecked, and grid_sample's gradients through autograd (its OpInfo)."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

from helpers import (assert_gradients_near, assert_matches, error_against, errors_of_cpu_and_ours, in_layout,
                     opinfo_gradients, run_on_kernels)

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"grid_sampler_2d_backward"}

backward = torch.ops.aten.grid_sampler_2d_backward
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
MODES = list(itertools.product(range(3), range(3), [False, True]))
MODE_IDS = [f"{'bilinear nearest bicubic'.split()[i]}-{'zeros border reflection'.split()[p]}-{'align' if a else 'noalign'}"
            for i, p, a in MODES]


def _args(n=2, c=3, size=(5, 6), points=(4, 7), dtype=torch.float32, spread=1.2, seed=0):
    torch.manual_seed(seed)
    x = torch.randn(n, c, *size).to(dtype)
    grid = (torch.rand(n, *points, 2) * 2 * spread - spread).to(dtype)
    return [torch.randn(n, c, *points).to(dtype), x, grid]


def _call(mode, mask=(True, True)):
    interpolation, padding, align = mode
    return lambda g, x, grid: backward(g, x, grid, interpolation, padding, align, list(mask))


def _check(args, mode, where="", mask=(True, True), reference=None):
    """Ours against the CPU's; where they differ by more than the dtype's
    tolerance (sums in another order, half rounded once where the CPU
    rounds every add), ours no further from the float64 result than the
    CPU's, or within a few ulps of the largest gradient."""
    call = _call(mode, mask)
    expected = call(*(reference or args))
    actual, dispatches = run_on_kernels(call, *args)
    truth = call(*[t.double() for t in (reference or args)])
    for a, e, t, name in zip(actual, expected, truth, ("grad_input", "grad_grid")):
        if e is None:
            assert a is None, f"{where} {name}"
            continue
        assert a.dtype == e.dtype and a.shape == e.shape and a.stride() == e.stride(), f"{where} {name}"
        _assert_near(a, e, t, f"{where} {name}")
    return dispatches


def _assert_near(actual, cpu, truth, where):
    try:
        assert_matches(actual, cpu, where)
    except AssertionError:
        finite = truth[truth.isfinite()]
        scale = finite.abs().max().item() if finite.numel() else 0.0
        bound = max(2 * error_against(cpu, truth), 8 * torch.finfo(actual.dtype).eps * scale)
        assert error_against(actual, truth) <= bound, f"{where}: {error_against(actual, truth):.3g} from float64"


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_modes_and_dtypes(mode, dtype):
    dispatches = _check(_args(dtype=dtype), mode, f"{mode} {dtype}")
    assert [d.op for d in dispatches] == [f"grid_sampler_2d_backward_{'bilinear nearest bicubic'.split()[mode[0]]}"]


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_points_on_pixel_centres_and_edges(mode):
    """Grid values that land exactly on pixels, halfway between them (the
    nearest mode's ties, to even), on the input's border and beyond it."""
    size, points = (4, 5), (3, 8)
    grad, x, _ = _args(2, 2, size, points)
    w = size[1]
    xs = torch.tensor([-1.0, 1.0, 0.0, -1.0 + 1 / w, 1.0 - 1 / w, 2.0 / w, 1.5, -3.0])
    ys = torch.tensor([-1.0, 1.0, 0.25])
    grid = torch.stack(torch.meshgrid(xs, ys, indexing="xy"), -1).expand(2, *points, 2).contiguous()
    _check([grad, x, grid], mode, f"exact points {mode}")


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(4, 4), (11, 11), (7, 30)], ids=str)
def test_identity_grids_take_the_cpus_side_of_each_pixel(size, align_corners):
    """affine_grid's identity puts points within an ulp of pixels: the side
    each rounds to picks the neighbour pair whose slope is the bilinear grid
    gradient, so ours must round as the CPU does (c + 1, then one fma with
    the scale and -0.5; c * scale + (size - 1) / 2 in one fma took the
    other side for 21 of an 11 x 11 grid's points)."""
    torch.manual_seed(0)
    h, w = size
    x = torch.randn(2, 3, h, w) * 4
    identity = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]]).expand(2, 2, 3)
    grid = torch.nn.functional.affine_grid(identity, (2, 3, h, w), align_corners=align_corners)
    grad = torch.randn(2, 3, h, w)
    call = _call((0, 0, align_corners))
    actual, _ = run_on_kernels(call, grad, x, grid)
    expected = call(grad, x, grid)
    for a, e, name in zip(actual, expected, ("grad_input", "grad_grid")):
        assert_matches(a, e, f"{size} align_corners={align_corners} {name}")


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_many_points_share_input_elements(mode):
    """A 3 x 3 input sampled at 64 x 64 points: every element gathers
    hundreds of shares (atomic adds from many threads, in the GPU's order),
    and reflection's far-out points flip several times. grad_input within
    the sum's rounding of the float64 result (8 sqrt(k) ulps of the sum of
    the shares' magnitudes, k the points: one lost add, a share of up to
    |grad_output|, is far larger); grad_grid (no atomics) as _check's."""
    args = _args(2, 4, (3, 3), (64, 64), spread=4.0)
    call = _call(mode)
    actual, _ = run_on_kernels(call, *args)
    expected = call(*args)
    wide = [t.double() for t in args]
    truth = call(*wide)
    # Bicubic weights reach -0.15 and 1.2: the |grad_output| call with
    # nonnegative shares bounds the magnitudes for bilinear and nearest,
    # twice it for bicubic.
    magnitudes = call(wide[0].abs(), *wide[1:])[0].abs() * (2.0 if mode[0] == 2 else 1.0)
    bound = 8 * 64 * torch.finfo(torch.float32).eps * magnitudes + 1e-6
    error = (actual[0].double() - truth[0]).abs()
    assert bool((error <= bound).all()), f"dense {mode} grad_input: {(error - bound).max():.3g} past the bound"
    _assert_near(actual[1], expected[1], truth[1], f"dense {mode} grad_grid")


@pytest.mark.parametrize("mask", [(True, False), (False, True), (False, False)], ids=str)
def test_output_masks(mask):
    """grad_grid always (the CPU's), grad_input only where asked."""
    dispatches = _check(_args(), (0, 0, False), f"mask {mask}", mask)
    assert dispatches


# (layout, operand): grad_output and input are images (channels-last too);
# the grid is (N, H, W, 2).
LAYOUT_CASES = [(layout, which) for layout in ("transposed", "strided", "channels_last") for which in (0, 1, 2)
                if not (layout == "channels_last" and which == 2)]


@pytest.mark.parametrize("layout, which", LAYOUT_CASES, ids=str)
def test_non_contiguous_operands(layout, which):
    args = _args(2, 3, (5, 6), (4, 7))
    if layout == "channels_last":
        args[which] = args[which].to(memory_format=torch.channels_last)
    else:
        args[which] = in_layout(args[which], layout)
    _check(args, (2, 2, False), f"operand {which} {layout}")


@pytest.mark.parametrize("n, c, points", [(0, 3, (4, 5)), (2, 0, (4, 5)), (2, 3, (0, 5))], ids=str)
def test_empty(n, c, points):
    """No samples or no channels: zero input gradients; grad_grid of the
    grid's shape (zero without channels)."""
    _check(_args(n, c, (5, 6), points), (0, 0, False), f"empty {n} {c} {points}")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e30"])
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_non_finite_and_huge_grid_values(value, mode):
    """A grid point at NaN, an infinity or far out: nothing is written out
    of bounds (the emulator's checked mode), and the other points'
    gradients are the CPU's. A point whose source coordinate is not finite
    (NaN; an infinity reflected) adds nothing to grad_input: the CPU's
    answer with the point's grad_output zeroed. (torch 2.13's CPU crashes
    the process for bilinear NaN under border or reflection padding and
    infinities under reflection, and puts a nearest or bicubic NaN or
    reflected infinity's share on column 0.) Border padding clips an
    infinity to the edge, as the CPU's. A reflected 1e30 lands where an
    exact fmod puts it (the CPU's differs): only finite there."""
    interpolation, padding, _ = mode
    args = _args()
    args[2] = args[2].clone()
    args[2][1, 2, 3, 0] = float(value)
    call = _call(mode)
    actual, _ = run_on_kernels(call, *args)
    adds_nothing = value == "nan" or (value.endswith("inf") and padding == 2)
    if adds_nothing:
        grad, grid = args[0].clone(), args[2].clone()
        grad[1, :, 2, 3] = 0.0
        grid[1, 2, 3, 0] = 0.0
        expected = call(grad, args[1], grid)
    else:
        expected = call(*args)
    if value == "1e30" and padding == 2:
        assert bool(actual[0].isfinite().all()), f"{mode}: grad_input not finite"
    else:
        assert_matches(actual[0], expected[0], f"{value} {mode} grad_input")
    others = torch.ones(args[2].shape[:3], dtype=torch.bool)
    others[1, 2, 3] = False
    assert_matches(actual[1][others], expected[1][others], f"{value} {mode} grad_grid")


def common_errors(backward, batch_mismatch=lambda grid: grid[:1]):
    """The CPU's errors that do not depend on the grid's dims, for the 2-D or
    3-D backward: dtypes and batch sizes (its shape checks come before its
    dtype dispatch, which comes before its typed reads of the grid)."""
    call = lambda g, x, grid: backward(g, x, grid, 0, 0, False, [True, True])  # noqa: E731
    return {
        "grid of another dtype": lambda g, x, grid: call(g, x, grid.double()),
        "batch sizes": lambda g, x, grid: call(g, x, batch_mismatch(grid)),
        "integers": lambda g, x, grid: call(g.int(), x.int(), grid.int()),
        "integers of other batch sizes": lambda g, x, grid: call(g.int(), x.int(), batch_mismatch(grid).int()),
        "a bool input beside a float grid": lambda g, x, grid: call(g, x.bool(), grid),
        "grad_output of another dtype": lambda g, x, grid: call(g.double(), x, grid),
    }


def common_unchecked(backward):
    """What the CPU leaves unchecked in either backward: modes outside its
    enums."""
    return {
        "unknown interpolation": lambda g, x, grid: backward(g, x, grid, 3, 0, False, [True, True]),
        "unknown padding": lambda g, x, grid: backward(g, x, grid, 0, 5, False, [True, True]),
    }


ERRORS = {
    **common_errors(backward),
    "3-D input": lambda g, x, grid: backward(g[0], x[0], grid[0], 0, 0, False, [True, True]),
    "5-D input": lambda g, x, grid: backward(g[..., None], x[..., None], grid[..., None, :1].expand(2, 4, 7, 1, 3),
                                             0, 0, False, [True, True]),
    "grid's last dim": lambda g, x, grid: backward(g, x, grid[..., :1], 0, 0, False, [True, True]),
    "empty spatial dim": lambda g, x, grid: backward(g, x[:, :, :0], grid, 0, 0, False, [True, True]),
}


@pytest.mark.parametrize("name", ERRORS.keys())
def test_errors_are_the_cpus(name):
    errors_of_cpu_and_ours(ERRORS[name], *_args())


UNCHECKED = {
    **common_unchecked(backward),
    "grad_output of another size": lambda g, x, grid: backward(g[:, :, :3], x, grid, 0, 0, False, [True, True]),
}


@pytest.mark.parametrize("name", UNCHECKED.keys())
def test_what_the_cpu_leaves_unchecked_raises(name):
    with pytest.raises(RuntimeError, match="grid_sampler_2d_backward"):
        run_on_kernels(UNCHECKED[name], *_args())


def test_float64_is_refused_clearly():
    with pytest.raises(TypeError, match="grid_sampler_2d_backward"):
        run_on_kernels(_call((0, 0, False)), *[t.double() for t in _args()])


def check_opinfo_gradients(name, dims, kernel):
    """An OpInfo's samples of `dims`-D inputs through autograd: the input's
    and grid's gradients against the CPU's, float32; some sample must reach
    `kernel` (a host-name prefix)."""
    opinfo = next(op for op in op_db if op.name == name)
    dtype = torch.float32
    reached = 0
    for i, sample in enumerate(opinfo.sample_inputs("cpu", dtype, requires_grad=True)):
        if sample.input.dim() != dims:
            continue
        inputs, gradients = opinfo_gradients(opinfo, sample, i, dtype)
        expected = gradients(*inputs)
        actual, dispatches = run_on_kernels(gradients, *inputs)
        reached += any(d.op.startswith(kernel) for d in dispatches)
        truth = gradients(*[t.detach().double() for t in inputs])
        assert_gradients_near(actual, expected, truth, dtype, f"{name} sample {i} {sample.kwargs}")
    assert reached, f"no sample of {name} reached {kernel}"


def test_opinfo_gradients():
    """grid_sample through autograd (the OpInfo's 2-D samples)."""
    check_opinfo_gradients("nn.functional.grid_sample", 4, "grid_sampler_2d_backward")
