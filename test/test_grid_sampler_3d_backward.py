"""grid_sampler_3d_backward (a fill op: torch 2.9 to 2.12 have the 3-D
grid_sample on MPS but not its gradient) against the CPU: both
interpolations (bilinear, that is trilinear, and nearest) x padding (zeros,
border, reflection) x align_corners, float32, half and bfloat16, grid points
outside the input, on voxel centres and edges, non-contiguous operands, many
points sharing input elements (the atomic adds), each output mask, empty
grids and channels, non-finite grid values, the CPU's errors and what it
leaves unchecked, and grid_sample's 5-D gradients through autograd (its
OpInfo). Float32 results are the CPU's bit for bit where no two points add
into one element (its scalar kernel's operations, in its order)."""

from __future__ import annotations

import itertools

import pytest
import torch

from helpers import assert_gradients_near, assert_matches, errors_of_cpu_and_ours, in_layout, run_on_kernels
from test_grid_sampler_backward import check_opinfo_gradients, common_errors, common_unchecked

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"grid_sampler_3d_backward"}

backward = torch.ops.aten.grid_sampler_3d_backward
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
MODES = list(itertools.product(range(2), range(3), [False, True]))
MODE_IDS = [f"{'bilinear nearest'.split()[i]}-{'zeros border reflection'.split()[p]}-{'align' if a else 'noalign'}"
            for i, p, a in MODES]


def _args(n=2, c=3, size=(4, 5, 6), points=(3, 4, 5), dtype=torch.float32, spread=1.2, seed=0):
    torch.manual_seed(seed)
    x = torch.randn(n, c, *size).to(dtype)
    grid = (torch.rand(n, *points, 3) * 2 * spread - spread).to(dtype)
    return [torch.randn(n, c, *points).to(dtype), x, grid]


def _call(mode, mask=(True, True)):
    interpolation, padding, align = mode
    return lambda g, x, grid: backward(g, x, grid, interpolation, padding, align, list(mask))


def _check(args, mode, where="", mask=(True, True)):
    """Ours against the CPU's; where they differ by more than the dtype's
    tolerance (half and bfloat16: ours computes in float, the CPU rounds
    every operation to the dtype), ours no further from the float64 result
    than twice the CPU's, or within a few ulps of the largest gradient."""
    call = _call(mode, mask)
    expected = call(*args)
    actual, dispatches = run_on_kernels(call, *args)
    truth = call(*[t.double() for t in args])
    for a, e, name in zip(actual, expected, ("grad_input", "grad_grid")):
        if e is not None:
            assert a.dtype == e.dtype and a.shape == e.shape and a.stride() == e.stride(), f"{where} {name}"
    dtype = args[1].dtype
    assert_gradients_near(actual, expected, truth, dtype, where)
    return dispatches


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_modes_and_dtypes(mode, dtype):
    dispatches = _check(_args(dtype=dtype), mode, f"{mode} {dtype}")
    assert [d.op for d in dispatches] == [f"grid_sampler_3d_backward_{'bilinear nearest'.split()[mode[0]]}"]


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_float32_is_the_cpus_bit_for_bit(mode):
    """Points far apart (one per 2 x 2 x 2 block of a finer input): no
    element gathers two shares, so no atomic order shows, and the float32
    arithmetic is the CPU's scalar kernel's."""
    grad, x, _ = _args(2, 3, (8, 8, 8), (3, 3, 3))
    centres = torch.tensor([-0.7, 0.05, 0.8])
    grid = torch.stack(torch.meshgrid(centres, centres + 0.03, centres - 0.02, indexing="ij"), -1)
    grid = grid.flip(-1).expand(2, 3, 3, 3, 3).contiguous()
    call = _call(mode)
    actual, _ = run_on_kernels(call, grad, x, grid)
    for a, e, name in zip(actual, call(grad, x, grid), ("grad_input", "grad_grid")):
        assert torch.equal(a, e), f"{mode} {name}: {(a - e).abs().max():.3g}"


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_points_on_voxel_centres_and_edges(mode):
    """Grid values that land exactly on voxels, halfway between them (the
    nearest mode's ties, to even), on the input's border and beyond it."""
    size, points = (3, 4, 5), (2, 3, 8)
    grad, x, _ = _args(2, 2, size, points)
    w = size[2]
    xs = torch.tensor([-1.0, 1.0, 0.0, -1.0 + 1 / w, 1.0 - 1 / w, 2.0 / w, 1.5, -3.0])
    ys = torch.tensor([-1.0, 1.0, 0.25])
    zs = torch.tensor([-1.0, 1.0 / 3])
    grid = torch.stack(torch.meshgrid(zs, ys, xs, indexing="ij"), -1).flip(-1).expand(2, *points, 3).contiguous()
    _check([grad, x, grid], mode, f"exact points {mode}")


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_many_points_share_input_elements(mode):
    """A 2 x 3 x 3 input sampled at 16 x 16 x 16 points: every element
    gathers hundreds of shares (atomic adds from many threads, in the GPU's
    order), and reflection's far-out points flip several times. grad_input
    within the sum's rounding of the float64 result (8 sqrt(k) ulps of the
    sum of the shares' magnitudes, k the points); grad_grid (no atomics)
    as _check's."""
    args = _args(2, 4, (2, 3, 3), (16, 16, 16), spread=4.0)
    call = _call(mode)
    actual, _ = run_on_kernels(call, *args)
    expected = call(*args)
    wide = [t.double() for t in args]
    truth = call(*wide)
    magnitudes = call(wide[0].abs(), *wide[1:])[0].abs()
    bound = 8 * 64 * torch.finfo(torch.float32).eps * magnitudes + 1e-6
    error = (actual[0].double() - truth[0]).abs()
    assert bool((error <= bound).all()), f"dense {mode} grad_input: {(error - bound).max():.3g} past the bound"
    assert_gradients_near(actual[1:], expected[1:], truth[1:], torch.float32, f"dense {mode} grad_grid")


@pytest.mark.parametrize("mask", [(True, False), (False, True), (False, False)], ids=str)
def test_output_masks(mask):
    """grad_grid always (the CPU's), grad_input only where asked."""
    assert _check(_args(), (0, 0, False), f"mask {mask}", mask)


# (layout, operand): grad_output and input are volumes (channels-last too);
# the grid is (N, D, H, W, 3).
LAYOUT_CASES = [(layout, which) for layout in ("transposed", "strided", "channels_last") for which in (0, 1, 2)
                if not (layout == "channels_last" and which == 2)]


@pytest.mark.parametrize("layout, which", LAYOUT_CASES, ids=str)
def test_non_contiguous_operands(layout, which):
    args = _args()
    if layout == "channels_last":
        args[which] = args[which].to(memory_format=torch.channels_last_3d)
    else:
        args[which] = in_layout(args[which], layout)
    _check(args, (0, 2, False), f"operand {which} {layout}")


def test_broadcast_grid():
    """An expanded grid (stride 0 over the batch), as affine_grid's callers
    may pass."""
    grad, x, grid = _args()
    _check([grad, x, grid[:1].expand_as(grid)], (0, 1, True), "expanded grid")


@pytest.mark.parametrize("n, c, points", [(0, 3, (3, 4, 5)), (2, 0, (3, 4, 5)), (2, 3, (3, 0, 5))], ids=str)
def test_empty(n, c, points):
    """No samples or no channels: zero input gradients; grad_grid of the
    grid's shape (zero without channels)."""
    _check(_args(n, c, (4, 5, 6), points), (0, 0, False), f"empty {n} {c} {points}")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e30"])
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_non_finite_and_huge_grid_values(value, mode):
    """A grid point at NaN, an infinity or far out: nothing is written out
    of bounds (the emulator's checked mode), and the gradients are the
    CPU's: its scalar kernel skips every neighbour outside the input, as
    ours, where a NaN or infinite coordinate puts them all."""
    args = _args()
    args[2] = args[2].clone()
    args[2][1, 2, 3, 0, 0] = float(value)
    call = _call(mode)
    actual, _ = run_on_kernels(call, *args)
    expected = call(*args)
    assert_matches(actual[0], expected[0], f"{value} {mode} grad_input")
    assert_matches(actual[1], expected[1], f"{value} {mode} grad_grid")


ERRORS = {
    **common_errors(backward),
    "4-D input": lambda g, x, grid: backward(g[0], x[0], grid[0], 0, 0, False, [True, True]),
    "4-D input and grid": lambda g, x, grid: backward(g[:, :, 0], x[:, :, 0], grid[:, 0, ..., :2], 0, 0, False,
                                                      [True, True]),
    "bicubic": lambda g, x, grid: backward(g, x, grid, 2, 0, False, [True, True]),
    "grid's last dim": lambda g, x, grid: backward(g, x, grid[..., :2], 0, 0, False, [True, True]),
    "empty spatial dim": lambda g, x, grid: backward(g, x[:, :, :, :0], grid, 0, 0, False, [True, True]),
    "0-dim input": lambda g, x, grid: backward(g, x[0, 0, 0, 0, 0], grid, 0, 0, False, [True, True]),
    # The CPU reads grad_output's strides before its typed reads of the grid.
    "a 4-D grad_output beside a float64 grid": lambda g, x, grid: backward(g[0], x, grid.double(), 0, 0, False,
                                                                           [True, True]),
}


@pytest.mark.parametrize("name", ERRORS.keys())
def test_errors_are_the_cpus(name):
    errors_of_cpu_and_ours(ERRORS[name], *_args())


UNCHECKED = {
    **common_unchecked(backward),
    "grad_output of another size": lambda g, x, grid: backward(g[:, :, :, :3], x, grid, 0, 0, False, [True, True]),
}


@pytest.mark.parametrize("name", UNCHECKED.keys())
def test_what_the_cpu_leaves_unchecked_raises(name):
    with pytest.raises(RuntimeError, match="grid_sampler_3d_backward"):
        run_on_kernels(UNCHECKED[name], *_args())


def test_float64_is_refused_clearly():
    with pytest.raises(TypeError, match="grid_sampler_3d_backward"):
        run_on_kernels(_call((0, 0, False)), *[t.double() for t in _args()])


@pytest.mark.parametrize("name", ["nn.functional.grid_sample", "grid_sampler_3d"])
def test_opinfo_gradients(name):
    """grid_sample and grid_sampler_3d through autograd (their OpInfos' 5-D
    samples)."""
    check_opinfo_gradients(name, 5, "grid_sampler_3d_backward")
