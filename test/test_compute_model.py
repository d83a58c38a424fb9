"""Metal's compute model on every backend that runs compile_shader: the
emulator, the CUDA backend (an NVIDIA GPU: real parallelism, SIMD groups as
warps) and Metal itself on a Mac. One kernel per feature, in
test/kernels/compute_model.metal (built ahead for CUDA by
tools/cuda_build.py), each checked against a numpy reference: grids and
clipped threadgroups in 1, 2 and 3 dimensions, barriers in clipped groups,
SIMD reductions, scans, shuffles and votes, in full, partial and divergent
SIMD groups, and atomics under contention. What only the emulator does
(checked mode, poison, its error messages) stays in test_emulator.py.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import mps_ops
from mps_ops.testing import device

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "compute_model.metal")
SIMD_WIDTH = 32


@pytest.fixture(scope="module")
def lib():
    with open(SOURCE) as f:
        return mps_ops.compile_shader(f.read())


def on_device(t: torch.Tensor) -> torch.Tensor:
    return t.to(device())


def simdgroups(threads: int, group: int) -> list[np.ndarray]:
    """The thread indices of each SIMD group of a 1-D grid: consecutive lanes
    of each threadgroup, the last group clipped at the grid's end."""
    out = []
    for start in range(0, threads, group):
        size = min(group, threads - start)
        out += [np.arange(start + s, start + min(s + SIMD_WIDTH, size)) for s in range(0, size, SIMD_WIDTH)]
    return out


def test_builtins_on_a_2d_grid_with_partial_groups(lib):
    w, h, gx, gy = 7, 5, 4, 2
    out = on_device(torch.zeros(h, w, 5, dtype=torch.int32))
    lib.where_2d(out, w, threads=[w, h], group_size=[gx, gy])
    y, x = np.mgrid[0:h, 0:w]
    tpg_x = np.minimum(gx, w - (x // gx) * gx)
    tpg_y = np.minimum(gy, h - (y // gy) * gy)
    expected = np.stack([x % gx, y % gy, (x // gx) * 100 + y // gy, tpg_x * 100 + tpg_y,
                         (x % gx) + tpg_x * (y % gy)], axis=-1)
    np.testing.assert_array_equal(out.cpu().numpy(), expected)


def test_3d_grid_covers_every_thread_once(lib):
    hits = on_device(torch.zeros(3 * 5 * 6, dtype=torch.int32))
    lib.count_3d(hits, threads=[6, 5, 3], group_size=[4, 2, 2])
    assert bool((hits == 1).all())


def test_barriers_in_clipped_3d_groups(lib):
    """A tree sum through threadgroup memory with a barrier per step, in
    groups clipped on every axis: the threads past a clipped group's edge
    never run, and the barriers still hold for the ones that do."""
    size, group = (7, 5, 3), (4, 2, 2)
    values = torch.randint(0, 10, (size[2], size[1], size[0])).float()  # exact sums in float
    out = on_device(torch.zeros(values.numel() * 2))
    lib.group_sum_3d(on_device(values.flatten()), out, threads=list(size), group_size=list(group))
    z, y, x = np.mgrid[0:size[2], 0:size[1], 0:size[0]]
    key = (x // group[0]) * 10000 + (y // group[1]) * 100 + z // group[2]
    v = values.numpy()
    sums = {k: v[key == k].sum() for k in np.unique(key)}
    tpg = [np.minimum(group[a], size[a] - (c // group[a]) * group[a]) for a, c in enumerate((x, y, z))]
    index = (x % group[0]) + tpg[0] * ((y % group[1]) + tpg[1] * (z % group[2]))
    got = out.cpu().numpy().reshape(size[2], size[1], size[0], 2)
    np.testing.assert_array_equal(got[..., 0], np.vectorize(sums.get)(key))
    np.testing.assert_array_equal(got[..., 1], index)


def test_threadgroup_array_and_barrier_reverse_within_groups(lib):
    x = torch.arange(100, dtype=torch.float32)
    out = on_device(torch.empty_like(x))
    lib.reverse_in_groups(on_device(x), out, group_size=64)
    expected = torch.cat([x[:64].flip(0), x[64:].flip(0)])  # the clipped last group reverses its 36
    assert torch.equal(out.cpu(), expected)


def test_reduction_across_simdgroups_with_threadgroup_parameter(lib):
    x = torch.randn(1000)
    out = on_device(torch.zeros(4))
    lib.group_sum(on_device(x), out, group_size=256, threadgroup_memory=[8 * 4])
    expected = torch.stack([c.double().sum() for c in x.split(256)]).float()
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-5, atol=1e-4)
    with pytest.raises(RuntimeError, match=r"threadgroup\(0\).*no memory length"):
        lib.group_sum(on_device(x), out, group_size=256)


def test_divergent_simd_collectives_are_separate(lib):
    x = torch.arange(64, dtype=torch.int32)
    out = on_device(torch.empty_like(x))
    lib.split_by_lane(on_device(x), out, group_size=64)
    out = out.cpu()
    for base in (0, 32):
        low = x[base : base + 10].sum().item()
        high = x[base + 10 : base + 32].sum().item() + 1000
        assert out[base : base + 10].tolist() == [low] * 10
        assert out[base + 10 : base + 32].tolist() == [high] * 22


def test_divergent_collectives_on_one_line_stay_separate(lib):
    x = torch.arange(32, dtype=torch.int32)
    out = on_device(torch.empty_like(x))
    lib.split_on_one_line(on_device(x), out, group_size=32)
    assert out[:10].tolist() == [45] * 10
    assert out[10:].tolist() == [31] * 22


def test_collectives_under_a_data_dependent_branch(lib):
    """Each branch's collectives run over the lanes that took it; scans and
    the first lane follow lane order among those lanes only."""
    x = torch.randint(0, 100, (96,), dtype=torch.int32)
    out = on_device(torch.zeros(96, 4, dtype=torch.int32))
    lib.split_by_value(on_device(x), out, group_size=64)  # a full group and a clipped one of 32
    got, v = out.cpu().numpy(), x.numpy().astype(np.int64)
    for lanes in simdgroups(96, 64):
        taken = lanes[v[lanes] % 3 == 0]
        other = lanes[v[lanes] % 3 != 0]
        if len(taken):
            vals = v[taken]
            np.testing.assert_array_equal(got[taken, 0], vals.sum())
            np.testing.assert_array_equal(got[taken, 1], np.cumsum(vals) - vals)
            np.testing.assert_array_equal(got[taken, 2], vals[0])
            np.testing.assert_array_equal(got[taken, 3], len(taken))
        if len(other):
            vals = v[other]
            np.testing.assert_array_equal(got[other, 0], vals.max())
            np.testing.assert_array_equal(got[other, 1], np.cumsum(vals))
            np.testing.assert_array_equal(got[other, 2], vals.min())
            np.testing.assert_array_equal(got[other, 3], [1] + [0] * (len(other) - 1))


@pytest.mark.parametrize("threads,group", [(100, 48), (100, 64), (70, 70)], ids=["48", "clipped", "70"])
def test_collectives_over_partial_simdgroups(lib, threads, group):
    """A threadgroup of 48 has a SIMD group of 16 lanes; one clipped at the
    grid's end, or of 70 threads, a short last one: the collectives cover
    exactly the lanes that exist."""
    x = torch.randint(-20, 50, (threads,), dtype=torch.int32)
    out = on_device(torch.zeros(threads, 6, dtype=torch.int32))
    lib.partial_simdgroups(on_device(x), out, threads=threads, group_size=group)
    got, v = out.cpu().numpy(), x.numpy().astype(np.int64)
    for lanes in simdgroups(threads, group):
        vals = v[lanes]
        np.testing.assert_array_equal(got[lanes, 0], vals.sum())
        np.testing.assert_array_equal(got[lanes, 1], np.cumsum(vals))
        np.testing.assert_array_equal(got[lanes, 2], vals.max())
        np.testing.assert_array_equal(got[lanes, 3], (vals > 0).sum())
        np.testing.assert_array_equal(got[lanes, 4], vals[0])
        np.testing.assert_array_equal(got[lanes, 5], np.cumsum(vals) - vals)


def test_scans_and_reductions_over_a_simdgroup(lib):
    x = torch.randint(0, 50, (64,), dtype=torch.int32)
    out = on_device(torch.empty(64, 8, dtype=torch.int32))
    lib.scans(on_device(x), out, group_size=64)
    out = out.cpu()
    for lane_block in (slice(0, 32), slice(32, 64)):
        v = x[lane_block].numpy().astype(np.int64)
        o = out[lane_block].numpy()
        np.testing.assert_array_equal(o[:, 0], np.cumsum(v))
        np.testing.assert_array_equal(o[:, 1], np.cumsum(v) - v)
        p = v % 3 + 1
        np.testing.assert_array_equal(o[:, 2], (np.cumprod(p) // p).astype(np.int32))
        assert (o[:, 3] == v.min()).all() and (o[:, 4] == v.max()).all()
        assert (o[:, 5] == np.bitwise_and.reduce(v | 1)).all()
        assert (o[:, 6] == np.bitwise_or.reduce(v)).all()
        assert (o[:, 7] == np.bitwise_xor.reduce(v)).all()


def run_shuffles(lib) -> np.ndarray:
    x = torch.arange(32, dtype=torch.float32)
    out = on_device(torch.empty(32, 10))
    lib.shuffles(on_device(x), out, group_size=32)
    return out.cpu().numpy()


def test_shuffles_broadcast_and_votes(lib):
    o = run_shuffles(lib)
    lanes = np.arange(32)
    np.testing.assert_array_equal(o[:, 0], (lanes + 5) % 32)
    np.testing.assert_array_equal(o[:29, 1], lanes[:29] + 3)  # lanes 29-31 read outside: undefined
    np.testing.assert_array_equal(o[2:, 2], lanes[2:] - 2)
    np.testing.assert_array_equal(o[:, 3], lanes ^ 1)
    np.testing.assert_array_equal(o[:, 4], (lanes + 4) % 32)
    assert (o[:, 5] == 7).all() and (o[:, 6] == 0).all()
    np.testing.assert_array_equal(o[:30, 7], lanes[:30] + 2)
    np.testing.assert_array_equal(o[30:, 7], -(lanes[30:] - 30))
    np.testing.assert_array_equal(o[:, 8], [1 + 2 + 4] + [1 + 2] * 31)
    assert (o[:, 9] == 1).all()


@pytest.mark.skipif(mps_ops.backend != "emulator", reason="emulator-only behaviour: poison values")
def test_shuffles_outside_the_simdgroup_read_poison_on_the_emulator(lib):
    """Metal leaves a shuffle from outside the SIMD group undefined; the
    emulator makes it NaN so that a kernel relying on it fails its tests."""
    assert np.isnan(run_shuffles(lib)[29:, 1]).all()


def test_atomics_under_contention_device_and_threadgroup(lib):
    x = torch.randint(0, 1000, (5000,), dtype=torch.int32)
    bins = on_device(torch.zeros(16, dtype=torch.int32))
    top = on_device(torch.zeros(1, dtype=torch.int32))
    lib.histogram(on_device(x), bins, top, group_size=128)
    np.testing.assert_array_equal(bins.cpu().numpy(), np.bincount(x.numpy() % 16, minlength=16))
    assert top.item() == x.max().item()


def test_half_and_bfloat_round_like_the_gpu(lib):
    x = torch.randn(257)
    h = on_device(torch.empty(257, dtype=torch.half))
    b = on_device(torch.empty(257, dtype=torch.bfloat16))
    lib.half_and_bfloat(on_device(x), h, b)
    assert torch.equal(h.cpu(), x.half() * torch.tensor(3.0, dtype=torch.half) + torch.tensor(0.1, dtype=torch.half))
    bf = torch.bfloat16
    assert torch.equal(b.cpu(), x.to(bf) * torch.tensor(3.0, dtype=bf) + torch.tensor(0.1, dtype=bf))


def test_sinpi_and_cospi_reduce_exactly(lib):
    """sin(pi x) and cos(pi x) within 2 ulps of float64's, from x reduced
    exactly: exact zeros and ones at whole and half turns, however large x."""
    whole = np.array([0.0, 1.0, -1.0, 2.0, -3.0, 7.0, 2.0**20, -(2.0**24), 2.0**30 + 2.0**7, 1e30])
    halves = np.array([0.5, -0.5, 1.5, -2.5, 12345.5, 2.0**22 + 0.5])
    rng = np.random.default_rng(7)
    spread = np.concatenate([rng.uniform(-4, 4, 4000), rng.uniform(-1e5, 1e5, 1000), 10.0 ** rng.uniform(-30, -1, 500)])
    x = np.concatenate([whole, halves, spread]).astype(np.float32)
    sines = on_device(torch.empty(x.size))
    cosines = on_device(torch.empty(x.size))
    lib.half_turns(on_device(torch.from_numpy(x)), sines, cosines)
    sines, cosines = sines.cpu().numpy(), cosines.cpu().numpy()
    # float64 reference: r = x - 2 rint(x / 2) in [-1, 1] is exact, then
    # sin folds to [-1/2, 1/2] and cos to a quarter turn, exactly as well.
    r = x.astype(np.float64) - 2.0 * np.rint(x.astype(np.float64) / 2.0)
    folded = np.where(r > 0.5, 1.0 - r, np.where(r < -0.5, -1.0 - r, r))
    ref_sin = np.sin(np.pi * folded)
    a = np.abs(r)
    ref_cos = np.where(a <= 0.25, np.cos(np.pi * a), np.where(a <= 0.75, np.sin(np.pi * (0.5 - a)), -np.cos(np.pi * (1.0 - a))))
    for got, ref in ((sines, ref_sin), (cosines, ref_cos)):
        ulps = np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
        assert ulps.max() <= 2.0, (x[ulps.argmax()], got[ulps.argmax()], ref[ulps.argmax()])
    n = whole.size
    assert np.all(sines[:n] == 0.0) and np.all(np.abs(cosines[:n]) == 1.0)
    assert np.all(cosines[n : n + halves.size] == 0.0) and np.all(np.abs(sines[n : n + halves.size]) == 1.0)
    inf_nan = on_device(torch.tensor([float("inf"), float("-inf"), float("nan")]))
    s, c = on_device(torch.empty(3)), on_device(torch.empty(3))
    lib.half_turns(inf_nan, s, c)
    assert torch.isnan(s.cpu()).all() and torch.isnan(c.cpu()).all()
